// Structured outputs: the request fields that constrain what the model may generate, read and compiled into a
// grammar (src/grammar/) that masks the vocabulary before every sample.
//
//   response_format  {"type": "text"} (no constraint), {"type": "json_object"} (any JSON object), or
//                    {"type": "json_schema", "json_schema": {"name", "schema", "strict"?, "description"?}} (OpenAI)
//   json_schema      a JSON Schema, as llama-server takes it at the top level
//   grammar          GBNF text, llama.cpp's field
//   guided_choice    a list of strings: the output is exactly one of them (vLLM's field)
// At most one of them per request. The same fields work in `pagoda batch` lines. Errors name the field and the
// problem (a schema keyword pagoda does not support, a GBNF syntax error with its line and column, ...).
#pragma once

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/compiled_grammar.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda {

inline constexpr std::array<std::string_view, 4> kConstraintFields = {"response_format", "json_schema", "grammar",
                                                                      "guided_choice"};

// The request's constraint, compiled for `tokenizer`'s vocabulary; nullptr when the request has none.
// `body` keeps its key order: a schema's properties are generated in the order the request lists them.
Result<std::shared_ptr<const grammar::CompiledGrammar>> read_output_constraint(const nlohmann::ordered_json& body,
                                                                               const Tokenizer& tokenizer);

}  // namespace pagoda
