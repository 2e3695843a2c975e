#include "api/output_constraint.h"

#include "api/request_json.h"
#include "grammar/json_schema.h"

namespace pagoda {
namespace {

using ordered_json = nlohmann::ordered_json;

bool constraint_field_set(const ordered_json& body, std::string_view key) {
  const auto it = body.find(std::string(key));
  return it != body.end() && !it->is_null();
}

// Real schemas are a few KiB; the cap keeps a hostile one from costing much to convert.
constexpr size_t kMaxSchemaBytes = 256 << 10;

Result<std::string> schema_gbnf(const ordered_json& schema, const char* param) {
  if (!schema.is_object() && !schema.is_boolean()) return make_field_error(param, std::string("'") + param + "' must be a JSON Schema object");
  if (schema.dump().size() > kMaxSchemaBytes)
    return make_field_error(param, std::string("'") + param + "': the schema is larger than 256 KiB");
  auto gbnf = grammar::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return make_field_error(param, "'" + std::string(param) + "': " + gbnf.error().message);
  return gbnf;
}

Result<std::string> constraint_gbnf(const ordered_json& body, std::string_view field) {
  const ordered_json& v = body.at(std::string(field));
  if (field == "grammar") {
    if (!v.is_string()) return make_field_error("grammar", "'grammar' must be a string of GBNF rules");
    return v.get<std::string>();
  }
  if (field == "json_schema") return schema_gbnf(v, "json_schema");
  if (field == "guided_choice") {
    if (!v.is_array() || v.empty()) return make_field_error("guided_choice", "'guided_choice' must be a non-empty list of strings");
    std::vector<std::string> choices;
    for (const ordered_json& c : v) {
      if (!c.is_string()) return make_field_error("guided_choice", "'guided_choice' must be a non-empty list of strings");
      choices.push_back(c.get<std::string>());
    }
    return grammar::choice_gbnf(choices);
  }
  // response_format
  if (!v.is_object() || !v.contains("type") || !v["type"].is_string())
    return make_field_error("response_format", "'response_format' must be an object with a 'type'");
  const std::string type = v["type"].get<std::string>();
  for (const auto& [key, value] : v.items())
    if (key != "type" && !(type == "json_schema" && key == "json_schema") && !value.is_null())
      return make_field_error("response_format", "'response_format." + key + "' is not supported with type '" + type + "'");
  if (type == "text") return std::string();
  if (type == "json_object") return grammar::json_object_gbnf();
  if (type != "json_schema")
    return make_field_error("response_format", "'response_format.type' must be 'text', 'json_object' or 'json_schema', not '" + type + "'");
  if (!v.contains("json_schema") || !v["json_schema"].is_object())
    return make_field_error("response_format", "'response_format.json_schema' must be an object with 'name' and 'schema'");
  const ordered_json& js = v["json_schema"];
  for (const auto& [key, value] : js.items()) {
    if (key == "name") {
      if (!value.is_string()) return make_field_error("response_format", "'response_format.json_schema.name' must be a string");
    } else if (key == "strict") {
      if (!value.is_boolean() && !value.is_null())
        return make_field_error("response_format", "'response_format.json_schema.strict' must be true or false");
    } else if (key == "description") {
      if (!value.is_string() && !value.is_null())
        return make_field_error("response_format", "'response_format.json_schema.description' must be a string");
    } else if (key != "schema") {
      return make_field_error("response_format", "'response_format.json_schema." + key + "' is not supported");
    }
  }
  if (!js.contains("name")) return make_field_error("response_format", "'response_format.json_schema.name' is required");
  // Without a schema OpenAI accepts any JSON object.
  if (!field_set(js, "schema")) return grammar::json_object_gbnf();
  auto gbnf = schema_gbnf(js["schema"], "response_format");
  if (!gbnf.ok()) return gbnf.error();
  return gbnf;
}

}  // namespace

Result<std::shared_ptr<const grammar::CompiledGrammar>> read_output_constraint(const ordered_json& body,
                                                                               const Tokenizer& tokenizer) {
  std::string_view given;
  for (std::string_view field : kConstraintFields) {
    if (!constraint_field_set(body, field)) continue;
    if (!given.empty())
      return make_field_error(std::string(field), "'" + std::string(given) + "' and '" + std::string(field) +
                                                      "' both constrain the output; give one");
    given = field;
  }
  if (given.empty()) return std::shared_ptr<const grammar::CompiledGrammar>();
  auto gbnf = constraint_gbnf(body, given);
  if (!gbnf.ok()) return gbnf.error();
  if (gbnf->empty()) return std::shared_ptr<const grammar::CompiledGrammar>();  // response_format text
  auto compiled = grammar::compile_grammar(*gbnf, tokenizer);
  if (!compiled.ok()) return make_field_error(std::string(given), "'" + std::string(given) + "': " + compiled.error().message);
  return compiled;
}

}  // namespace pagoda
