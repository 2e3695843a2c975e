#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace pagoda::grammar {
namespace {

using ojson = nlohmann::ordered_json;

struct Compiled {
  std::string gbnf;
  std::shared_ptr<const Grammar> grammar;
  bool accepts(std::string_view text) const { return GrammarMatcher(grammar).accepts(text); }
};

Compiled compile(const char* schema) {
  auto text = json_schema_to_gbnf(ojson::parse(schema));
  EXPECT_TRUE(text.ok()) << schema << ": " << (text.ok() ? "" : text.error().message);
  if (!text.ok()) return {};
  auto g = parse_gbnf(*text);
  EXPECT_TRUE(g.ok()) << *text << "\n" << (g.ok() ? "" : g.error().message);
  return {*text, g.ok() ? *g : nullptr};
}

std::string error_of(const char* schema) {
  auto text = json_schema_to_gbnf(ojson::parse(schema));
  if (text.ok()) {
    auto g = parse_gbnf(*text);
    return g.ok() ? "(ok)" : g.error().message;
  }
  return text.error().message;
}

TEST(JsonSchema, ObjectsWithRequiredAndOptionalProperties) {
  const Compiled c = compile(R"({"type": "object", "properties": {"name": {"type": "string"},
      "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name"]})");
  for (const char* ok : {R"({"name": "Ada"})", R"({"name":"Ada","age":36})", R"({"name": "Ada", "tags": ["x", "y"]})",
                         R"({"name": "A", "age": -3, "tags": []})", "{\n  \"name\": \"Ada\",\n  \"age\": 1\n}"})
    EXPECT_TRUE(c.accepts(ok)) << ok;
  for (const char* bad : {R"({})", R"({"age": 3})", R"({"name": 5})", R"({"name": "Ada", "extra": 1})",
                          R"({"age": 3, "name": "Ada"})", R"({"name": "Ada",})", R"({"name": "Ada", "age": 1.5})",
                          R"(["name"])"})
    EXPECT_FALSE(c.accepts(bad)) << bad;
}

TEST(JsonSchema, AdditionalPropertiesAndFreeObjects) {
  const Compiled open = compile(R"({"type": "object", "properties": {"a": {"type": "integer"}},
      "additionalProperties": {"type": "boolean"}})");
  EXPECT_TRUE(open.accepts(R"({"a": 1, "b": true, "c": false})"));
  EXPECT_TRUE(open.accepts(R"({"b": true})"));
  EXPECT_FALSE(open.accepts(R"({"a": 1, "b": 2})"));
  const Compiled any = compile(R"({"type": "object", "additionalProperties": true})");
  EXPECT_TRUE(any.accepts(R"({"x": [1, {"y": null}], "z": "w"})"));
  const Compiled closed = compile(R"({"type": "object"})");
  EXPECT_TRUE(closed.accepts("{}"));
  EXPECT_FALSE(closed.accepts(R"({"x": 1})"));
}

TEST(JsonSchema, ArraysTuplesAndCounts) {
  const Compiled c = compile(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_FALSE(c.accepts("[1]"));
  EXPECT_TRUE(c.accepts("[1, 2]"));
  EXPECT_TRUE(c.accepts("[1,2,3]"));
  EXPECT_FALSE(c.accepts("[1, 2, 3, 4]"));
  const Compiled t = compile(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}],
      "items": false, "minItems": 1})");
  EXPECT_TRUE(t.accepts(R"(["a"])"));
  EXPECT_TRUE(t.accepts(R"(["a", true])"));
  EXPECT_FALSE(t.accepts(R"([])"));
  EXPECT_FALSE(t.accepts(R"([true])"));
  EXPECT_FALSE(t.accepts(R"(["a", true, 1])"));
  const Compiled empty = compile(R"({"type": "array", "maxItems": 0})");
  EXPECT_TRUE(empty.accepts("[]"));
  EXPECT_FALSE(empty.accepts("[1]"));
}

TEST(JsonSchema, EnumsConstsUnionsAndNullable) {
  const Compiled e = compile(R"({"enum": ["red", 3, null, {"k": [1]}]})");
  for (const char* ok : {R"("red")", "3", "null", R"({"k":[1]})"}) EXPECT_TRUE(e.accepts(ok)) << ok;
  EXPECT_FALSE(e.accepts(R"("blue")"));
  EXPECT_TRUE(compile(R"({"const": "x"})").accepts(R"("x")"));
  const Compiled u = compile(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]})");
  EXPECT_TRUE(u.accepts("12"));
  EXPECT_TRUE(u.accepts(R"("ab")"));
  EXPECT_FALSE(u.accepts(R"("abc")"));
  const Compiled types = compile(R"({"type": ["string", "null"], "minLength": 1})");
  EXPECT_TRUE(types.accepts("null"));
  EXPECT_TRUE(types.accepts(R"("a")"));
  EXPECT_FALSE(types.accepts(R"("")"));
  const Compiled nullable = compile(R"({"type": "boolean", "nullable": true})");
  EXPECT_TRUE(nullable.accepts("null"));
  EXPECT_TRUE(nullable.accepts("false"));
  EXPECT_TRUE(compile(R"({"oneOf": [{"type": "null"}, {"type": "boolean"}]})").accepts("true"));
}

TEST(JsonSchema, AllOfMergesObjects) {
  const Compiled c = compile(R"({"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}},
      "required": ["id"]}}, "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"name": {"type": "string"}},
      "required": ["name"]}]})");
  EXPECT_TRUE(c.accepts(R"({"id": 1, "name": "x"})"));
  EXPECT_FALSE(c.accepts(R"({"id": 1})"));
  EXPECT_NE(error_of(R"({"allOf": [{"type": "string"}]})"), "(ok)");
}

TEST(JsonSchema, RefsIncludingRecursion) {
  const Compiled tree = compile(R"({"$defs": {"node": {"type": "object", "properties": {
      "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["value"]}}, "$ref": "#/$defs/node"})");
  EXPECT_TRUE(tree.accepts(R"({"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": 4}]}]})"));
  EXPECT_FALSE(tree.accepts(R"({"value": 1, "children": [{"children": []}]})"));
  const Compiled self = compile(R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"},
      {"type": "null"}]}}, "required": ["next"]})");
  EXPECT_TRUE(self.accepts(R"({"next": {"next": null}})"));
  const Compiled old = compile(R"({"definitions": {"a": {"type": "boolean"}}, "items": {"$ref": "#/definitions/a"}})");
  EXPECT_TRUE(old.accepts("[true, false]"));
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("does not name a definition"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "https://example.com/s.json"})").find("does not name"), std::string::npos);
}

TEST(JsonSchema, StringsLengthsFormatsAndPatterns) {
  const Compiled len = compile(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_FALSE(len.accepts(R"("a")"));
  EXPECT_TRUE(len.accepts(R"("ab")"));
  EXPECT_TRUE(len.accepts(R"("a\"c")"));  // an escaped quote is one character
  EXPECT_FALSE(len.accepts(R"("abcd")"));
  struct F {
    const char* format;
    const char* ok;
    const char* bad;
  };
  for (const F& f : std::vector<F>{{"date", R"("2025-01-15")", R"("2025-13-01")"},
                                   {"time", R"("10:30:00Z")", R"("25:00:00Z")"},
                                   {"date-time", R"("2025-01-15T10:30:00.5+01:00")", R"("2025-01-15 10:30:00Z")"},
                                   {"uuid", R"("123e4567-e89b-12d3-a456-426614174000")", R"("123e4567")"},
                                   {"email", R"("ada.lovelace@example.org")", R"("ada@")"}}) {
    const Compiled c = compile(("{\"type\": \"string\", \"format\": \"" + std::string(f.format) + "\"}").c_str());
    EXPECT_TRUE(c.accepts(f.ok)) << f.format;
    EXPECT_FALSE(c.accepts(f.bad)) << f.format;
  }
  const Compiled pat = compile(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3,4}(x|yz)?$"})");
  EXPECT_TRUE(pat.accepts(R"("AB-123")"));
  EXPECT_TRUE(pat.accepts(R"("AB-1234yz")"));
  EXPECT_FALSE(pat.accepts(R"("ab-123")"));
  EXPECT_FALSE(pat.accepts(R"("AB-12")"));
  const Compiled quote = compile(R"({"type": "string", "pattern": "a\"b\\\\c"})");
  EXPECT_TRUE(quote.accepts(R"("a\"b\\c")"));
  const Compiled negated = compile(R"({"type": "string", "pattern": "[^a-c]+"})");
  EXPECT_TRUE(negated.accepts(R"("xyz")"));
  EXPECT_TRUE(negated.accepts(R"("x\"y")"));
  EXPECT_FALSE(negated.accepts(R"("xay")"));
  for (const char* bad : {R"J({"type": "string", "pattern": "(a)\\1"})J", R"J({"type": "string", "pattern": "(?=a)"})J",
                          R"({"type": "string", "pattern": "a*?"})", R"({"type": "string", "pattern": "[a"})",
                          R"({"type": "string", "format": "hostname"})"})
    EXPECT_NE(error_of(bad), "(ok)") << bad;
}

TEST(JsonSchema, IntegerBoundsAreExactNumberBoundsLimitSignAndDigits) {
  const Compiled c = compile(R"({"type": "integer", "minimum": 0, "maximum": 150})");
  EXPECT_TRUE(c.accepts("0"));
  EXPECT_TRUE(c.accepts("150"));
  EXPECT_FALSE(c.accepts("151"));  // integers: the exact range (integer_range_test.cpp)
  EXPECT_FALSE(c.accepts("999"));
  EXPECT_FALSE(c.accepts("1000"));
  EXPECT_FALSE(c.accepts("-1"));
  EXPECT_FALSE(c.accepts("01"));
  const Compiled neg = compile(R"({"type": "number", "maximum": -1, "minimum": -50})");
  EXPECT_TRUE(neg.accepts("-50.25"));  // numbers: sign and integer digits only, as documented
  EXPECT_TRUE(neg.accepts("-99"));
  EXPECT_FALSE(neg.accepts("3"));
  EXPECT_FALSE(neg.accepts("-100"));
  const Compiled free = compile(R"({"type": "number"})");
  EXPECT_TRUE(free.accepts("-1.5e+10"));
  EXPECT_FALSE(free.accepts("1."));
  EXPECT_FALSE(free.accepts("+1"));
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  for (const char* kw : {"not", "if", "patternProperties", "uniqueItems", "multipleOf", "minProperties",
                         "contains", "propertyNames", "dependentRequired", "unevaluatedProperties"}) {
    const std::string schema = std::string(R"({"type": "object", ")") + kw + R"(": {}})";
    auto r = json_schema_to_gbnf(ojson::parse(schema));
    ASSERT_FALSE(r.ok()) << kw;
    EXPECT_NE(r.error().message.find(std::string("'") + kw + "'"), std::string::npos) << r.error().message;
  }
  auto nested = json_schema_to_gbnf(ojson::parse(R"({"properties": {"a": {"items": {"uniqueItems": true}}}})"));
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().message.find("/properties/a/items"), std::string::npos) << nested.error().message;
  // Annotations are fine.
  EXPECT_EQ(error_of(R"({"title": "t", "description": "d", "$schema": "x", "examples": [1], "type": "integer"})"),
            "(ok)");
}

TEST(JsonSchema, ImpossibleAndHostileSchemasFail) {
  EXPECT_NE(error_of(R"({"type": "array", "minItems": 3, "maxItems": 2})"), "(ok)");
  EXPECT_NE(error_of(R"({"type": "string", "minLength": 3, "maxLength": 2})"), "(ok)");
  EXPECT_NE(error_of(R"({"type": "object", "required": ["x"]})"), "(ok)");
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": 5, "maximum": 1})"), "(ok)");
  EXPECT_NE(error_of(R"({"enum": []})"), "(ok)");
  EXPECT_NE(error_of(R"({"type": "wat"})"), "(ok)");
  EXPECT_NE(error_of("false"), "(ok)");
  EXPECT_NE(error_of(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})"), "(ok)");  // left-recursive
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += R"({"items": )";
  deep += "{}";
  for (int i = 0; i < 100000; ++i) deep += "}";
  const ojson j = ojson::parse(deep);
  auto r = json_schema_to_gbnf(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nests deeper"), std::string::npos);
}

TEST(JsonSchema, JsonObjectAndChoices) {
  auto g = parse_gbnf(json_object_gbnf());
  ASSERT_TRUE(g.ok()) << g.error().message;
  GrammarMatcher m(*g);
  EXPECT_TRUE(m.accepts(R"({"a": [1, 2.5, {"b": null}], "c": "\u00e9\n"})"));
  EXPECT_FALSE(m.accepts("[1]"));
  EXPECT_FALSE(m.accepts(R"({"a": 1} {"b": 2})"));
  auto c = parse_gbnf(choice_gbnf({"yes", "no", "maybe \"so\""}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  GrammarMatcher mc(*c);
  EXPECT_TRUE(mc.accepts("maybe \"so\""));
  EXPECT_FALSE(mc.accepts("yess"));
}

}  // namespace
}  // namespace pagoda::grammar
