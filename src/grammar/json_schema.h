// JSON Schema -> GBNF: the grammar of the JSON texts a schema allows, for constrained decoding.
//
// Supported keywords (anything else is an error that names it; never silently ignored):
//   type (a name or a list), enum, const, anyOf, oneOf (as anyOf: the grammar cannot count matches), allOf (of
//   object schemas: properties and required merged), $ref to "#", "#/$defs/NAME" or "#/definitions/NAME"
//   (recursive references allowed), $defs / definitions, nullable (OpenAPI's), and the annotations title,
//   description, $schema, $id, $comment, examples, default, deprecated, readOnly, writeOnly;
//   objects: properties (generated in their declared order), required, additionalProperties (false, true or a
//     schema; absent means false, as in llama.cpp: a free-form key would let the model wander off the schema);
//   arrays: items (a schema or false), prefixItems, minItems, maxItems;
//   strings: minLength, maxLength, pattern (see below), format date, time, date-time, uuid, email;
//   integers and numbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum: on integers the exact range
//     (grammar/integer_range.h); on numbers they bound the sign and the number of integer digits (a maximum of
//     150 allows up to 3 digits), not the exact value.
// pattern: a regular-expression subset matched against the whole string (an unanchored pattern is read as if
// it were anchored): literals, '.', classes [a-z] [^...] with \d \w \s, groups ( ) and (?: ), alternation |,
// quantifiers * + ? {m} {m,} {m,n}, anchors ^ at the start and $ at the end. Backreferences, lookaround and
// lazy quantifiers are errors.
//
// Whitespace between tokens is bounded: at most one newline and 20 spaces or tabs in a row, so a model can never
// loop on whitespace. The schema is untrusted: its nesting depth and the grammar's size are bounded.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pagoda::grammar {

inline constexpr int kMaxSchemaDepth = 64;

// The GBNF text (root rule "root") of the JSON values `schema` allows. Errors name the keyword and where it is
// ("unsupported keyword 'not' at /properties/a").
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// For grammars that embed several schemas (tool calls): the rules of `schema` as `rule_name ::= ...` plus helpers
// named rule_name-N, without the shared primitives (json-ws, json-string, ...), which json_primitives_gbnf() gives
// once. rule_name: letters, digits and '-'.
Result<std::string> json_schema_rules(const nlohmann::ordered_json& schema, const std::string& rule_name);
std::string json_primitives_gbnf();

// The GBNF text of any JSON object (response_format json_object).
std::string json_object_gbnf();

// The GBNF text of exactly one of `choices` (as plain text, not JSON).
std::string choice_gbnf(const std::vector<std::string>& choices);

// `text` as a GBNF string literal ("..." with escapes).
std::string gbnf_literal(std::string_view text);

}  // namespace pagoda::grammar
