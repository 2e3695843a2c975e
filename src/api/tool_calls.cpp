#include "api/tool_calls.h"

#include <algorithm>
#include <cctype>

#include "api/generic_tool_format.h"
#include "api/tool_call_stream.h"
#include "grammar/json_schema.h"
#include "util/sha256.h"

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;

bool has_substring(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<ParsedToolCall> tool_call_from_json(const ojson& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const ojson* args = nullptr;
  for (const char* key : {"arguments", "parameters"})
    if (j.contains(key)) args = &j[key];
  ParsedToolCall call{j["name"].get<std::string>(), "{}"};
  if (args) {
    if (args->is_string()) {
      call.arguments = args->get<std::string>();  // some models write the arguments as a JSON string
    } else if (args->is_object()) {
      call.arguments = args->dump();
    } else {
      return std::nullopt;
    }
  }
  return call;
}

namespace {

// The longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3: return "llama-3";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kGeneric: return "generic";
    case ToolCallFormat::kLlama4: return "llama-4";
    case ToolCallFormat::kQwen3Coder: return "qwen3-coder";
    case ToolCallFormat::kNone: break;
  }
  return "none";
}

ToolCallFormat detect_tool_call_format(std::string_view t) {
  // Qwen3-Coder's <tool_call> holds XML (<function=name><parameter=p>...), not Hermes' JSON.
  if (has_substring(t, kXmlFunctionOpen) && has_substring(t, kHermesOpen)) return ToolCallFormat::kQwen3Coder;
  if (has_substring(t, kHermesOpen)) return ToolCallFormat::kHermes;
  if (has_substring(t, "<|header_start|>") && has_substring(t, "tool_calls") && has_substring(t, kPythonStart))
    return ToolCallFormat::kLlama4;
  if (has_substring(t, kMistralMarker)) return ToolCallFormat::kMistral;
  if (has_substring(t, "<|start_header_id|>") && has_substring(t, "tools") &&
      (has_substring(t, kPythonTag) || has_substring(t, "\"parameters\": dictionary of argument name")))
    return ToolCallFormat::kLlama3;
  return ToolCallFormat::kNone;
}

Result<std::vector<ToolSpec>> read_tools(const ojson& tools) {
  if (!tools.is_array()) return make_field_error("tools", "'tools' must be a list");
  std::vector<ToolSpec> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const ojson& t = tools[i];
    if (!t.is_object() || !t.contains("type") || t["type"] != "function" || !t.contains("function") ||
        !t["function"].is_object())
      return make_field_error("tools", "'" + where + "' must be {\"type\": \"function\", \"function\": {...}}");
    for (const auto& [key, value] : t.items())
      if (key != "type" && key != "function") return make_field_error("tools", "'" + where + "." + key + "' is not supported");
    const ojson& f = t["function"];
    ToolSpec spec;
    for (const auto& [key, value] : f.items()) {
      if (key == "name") {
        if (!value.is_string() || value.get<std::string>().empty())
          return make_field_error("tools", "'" + where + ".function.name' must be a non-empty string");
        spec.name = value.get<std::string>();
      } else if (key == "parameters") {
        if (!value.is_object()) return make_field_error("tools", "'" + where + ".function.parameters' must be a JSON Schema object");
        spec.parameters = value;
      } else if (key == "description") {
        if (!value.is_string()) return make_field_error("tools", "'" + where + ".function.description' must be a string");
        spec.description = value.get<std::string>();
      } else if (key == "strict") {
        // strict is how pagoda always works when a call is forced
        if (!value.is_boolean()) return make_field_error("tools", "'" + where + ".function.strict' must be true or false");
      } else {
        return make_field_error("tools", "'" + where + ".function." + key + "' is not supported");
      }
    }
    if (spec.name.empty()) return make_field_error("tools", "'" + where + ".function.name' is required");
    for (const ToolSpec& other : out)
      if (other.name == spec.name) return make_field_error("tools", "two tools are named '" + spec.name + "'");
    if (spec.parameters.is_null()) spec.parameters = ojson{{"type", "object"}, {"properties", ojson::object()}};
    out.push_back(std::move(spec));
  }
  return out;
}

Result<ToolChoice> read_tool_choice(const ojson& c, const std::vector<ToolSpec>& tools) {
  ToolChoice out;
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s == "auto") return out;
    if (s == "none") {
      out.kind = ToolChoice::Kind::kNone;
      return out;
    }
    if (s == "required") {
      if (tools.empty()) return make_field_error("tool_choice", "'tool_choice' \"required\" needs 'tools'");
      out.kind = ToolChoice::Kind::kRequired;
      return out;
    }
    return make_field_error("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function");
  }
  if (!c.is_object() || !c.contains("type") || c["type"] != "function" || !c.contains("function") ||
      !c["function"].is_object() || !c["function"].contains("name") || !c["function"]["name"].is_string())
    return make_field_error("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                           "{\"type\": \"function\", \"function\": {\"name\": ...}}");
  out.kind = ToolChoice::Kind::kNamed;
  out.name = c["function"]["name"].get<std::string>();
  for (const ToolSpec& t : tools)
    if (t.name == out.name) return out;
  return make_field_error("tool_choice", "'tool_choice' names '" + out.name + "', which is not in 'tools'");
}

namespace {

// The schema of one parameter of a tool (an empty object when the tool does not describe it).
const ojson& parameter_schema(const ToolSpec& tool, const std::string& name) {
  static const ojson kAny = ojson::object();
  const ojson& p = tool.parameters;
  if (p.is_object() && p.contains("properties") && p["properties"].is_object() && p["properties"].contains(name))
    return p["properties"][name];
  return kAny;
}

bool is_string_schema(const ojson& schema) {
  return schema.is_object() && schema.contains("type") && schema["type"] == "string";
}

// Qwen3-Coder's XML calls: <tool_call>\n<function=NAME>\n then each parameter (required ones always, in the
// schema's order) as <parameter=P>\nVALUE\n</parameter>\n, then </function>\n</tool_call>. A string value is raw
// text without '<' (an enum: one of its strings), any other value JSON valid for its schema.
Result<std::string> qwen3_coder_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice, bool parallel) {
  std::string rules = grammar::json_primitives_gbnf();
  rules += "xml-text ::= [^<]*\n";
  std::string alternatives;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec& t = tools[i];
    if (choice.kind == ToolChoice::Kind::kNamed && t.name != choice.name) continue;
    const std::string tool_rule = "tool" + std::to_string(i);
    std::string body = grammar::gbnf_literal("<tool_call>\n<function=" + t.name + ">\n");
    const ojson& params = t.parameters;
    std::vector<std::string> required;
    if (params.contains("required") && params["required"].is_array())
      for (const ojson& r : params["required"])
        if (r.is_string()) required.push_back(r.get<std::string>());
    if (params.contains("properties") && params["properties"].is_object()) {
      size_t j = 0;
      for (const auto& [name, schema] : params["properties"].items()) {
        const std::string prule = tool_rule + "-p" + std::to_string(j++);
        std::string value;
        if (schema.is_object() && schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty() &&
            std::all_of(schema["enum"].begin(), schema["enum"].end(), [](const ojson& v) { return v.is_string(); })) {
          for (const ojson& v : schema["enum"])
            value += std::string(value.empty() ? "( " : " | ") + grammar::gbnf_literal(v.get<std::string>());
          value += " )";
        } else if (is_string_schema(schema)) {
          value = schema.contains("maxLength") && schema["maxLength"].is_number_unsigned()
                      ? "[^<]{0," + std::to_string(schema["maxLength"].get<uint64_t>()) + "}"
                      : "xml-text";
        } else {
          auto r = grammar::json_schema_rules(schema, prule + "-value");
          if (!r.ok()) return make_field_error("tools", "tool '" + t.name + "' parameter '" + name + "': " + r.error().message);
          rules += *r;
          value = prule + "-value";
        }
        rules += prule + " ::= " + grammar::gbnf_literal("<parameter=" + name + ">\n") + " " + value + " " +
                 grammar::gbnf_literal("\n</parameter>\n") + "\n";
        const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
        body += " " + prule + (is_required ? "" : "?");
      }
    }
    body += " " + grammar::gbnf_literal("</function>\n</tool_call>");
    rules += tool_rule + "-call ::= " + body + "\n";
    alternatives += std::string(alternatives.empty() ? "" : " | ") + tool_rule + "-call";
  }
  rules += "tool-call ::= " + alternatives + "\n";
  rules += parallel ? "root ::= tool-call ( \"\\n\" tool-call )*\n" : "root ::= tool-call\n";
  return rules;
}

// A qwen3-coder value as JSON: raw text for a string parameter; otherwise the JSON it spells, or the text.
ojson xml_value(std::string_view raw, const ojson& schema) {
  const std::string text(raw);
  if (is_string_schema(schema)) return text;
  ojson parsed = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? ojson(text) : parsed;
}

// One <tool_call> block's inside: <function=NAME>...</function>; nullopt when malformed.
std::optional<ParsedToolCall> parse_xml_call(std::string_view body, const std::vector<ToolSpec>* tools) {
  body = trim(body);
  if (body.substr(0, kXmlFunctionOpen.size()) != kXmlFunctionOpen) return std::nullopt;
  const size_t name_end = body.find('>');
  if (name_end == std::string_view::npos) return std::nullopt;
  ParsedToolCall call;
  call.name = std::string(body.substr(kXmlFunctionOpen.size(), name_end - kXmlFunctionOpen.size()));
  if (call.name.empty()) return std::nullopt;
  const size_t close = body.rfind(kXmlFunctionClose);
  if (close == std::string_view::npos || close < name_end) return std::nullopt;
  const ToolSpec* spec = nullptr;
  if (tools)
    for (const ToolSpec& t : *tools)
      if (t.name == call.name) spec = &t;
  ojson args = ojson::object();
  std::string_view rest = body.substr(name_end + 1, close - name_end - 1);
  for (;;) {
    rest = trim(rest);
    if (rest.empty()) break;
    if (rest.substr(0, kXmlParameterOpen.size()) != kXmlParameterOpen) return std::nullopt;
    const size_t pname_end = rest.find('>');
    if (pname_end == std::string_view::npos) return std::nullopt;
    const std::string pname(rest.substr(kXmlParameterOpen.size(), pname_end - kXmlParameterOpen.size()));
    const size_t pclose = rest.find(kXmlParameterClose, pname_end);
    if (pname.empty() || pclose == std::string_view::npos) return std::nullopt;
    std::string_view value = rest.substr(pname_end + 1, pclose - pname_end - 1);
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);  // the template's own line breaks
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    static const ojson kAny = ojson::object();
    args[pname] = xml_value(value, spec ? parameter_schema(*spec, pname) : kAny);
    rest = rest.substr(pclose + kXmlParameterClose.size());
  }
  call.arguments = args.dump();
  return call;
}

// The calls of a reply in the llama-4 format: `*ok` when the reply is calls (after an optional
// <|python_start|> text <|python_end|>) and nothing else.
ParsedReply parse_llama4(std::string_view text) {
  ParsedReply out;
  const std::vector<ToolCallScan> scans = scan_tool_calls(ToolCallFormat::kLlama4, text);
  bool ok = !scans.empty();
  for (const ToolCallScan& sc : scans) {
    if (sc.object_end == std::string_view::npos) {
      ok = false;
      break;
    }
    const auto j = ojson::parse(text.substr(sc.object_begin, sc.object_end - sc.object_begin), nullptr, false);
    auto call = tool_call_from_json(j);
    if (!call || !(j.contains("parameters") || j.contains("arguments"))) {
      ok = false;
      break;
    }
    out.calls.push_back(std::move(*call));
  }
  if (ok) {
    std::string_view tail = text.substr(scans.back().object_end);
    tail = trim(tail);
    if (tail.substr(0, kPythonEnd.size()) == kPythonEnd) tail = trim(tail.substr(kPythonEnd.size()));
    ok = tail.empty();
  }
  if (!ok) {
    out.calls.clear();
    out.content = std::string(text);
    return out;
  }
  // The text the template puts between <|python_start|> and <|python_end|> before the calls.
  std::string_view head = trim(text.substr(0, scans.front().object_begin));
  if (head.substr(0, kPythonStart.size()) == kPythonStart) head = head.substr(kPythonStart.size());
  if (const size_t end = head.find(kPythonEnd); end != std::string_view::npos) head = head.substr(0, end);
  out.content = std::string(trim(head));
  return out;
}

}  // namespace

Result<std::string> tool_call_gbnf(ToolCallFormat format, const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                   bool parallel) {
  if (format == ToolCallFormat::kQwen3Coder) return qwen3_coder_gbnf(tools, choice, parallel);
  std::string rules = grammar::json_primitives_gbnf();
  std::string alternatives;
  const char* args_key =
      format == ToolCallFormat::kLlama3 || format == ToolCallFormat::kLlama4 ? "parameters" : "arguments";
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolSpec& t = tools[i];
    if (choice.kind == ToolChoice::Kind::kNamed && t.name != choice.name) continue;
    const std::string args_rule = "tool" + std::to_string(i) + "-args";
    auto r = grammar::json_schema_rules(t.parameters, args_rule);
    if (!r.ok()) return make_field_error("tools", "tool '" + t.name + "' parameters: " + r.error().message);
    rules += *r;
    const std::string head = "{\"name\": " + ojson(t.name).dump() + ", \"" + args_key + "\": ";
    alternatives += std::string(alternatives.empty() ? "" : " | ") + grammar::gbnf_literal(head) + " " + args_rule +
                    " \"}\"";
  }
  rules += "tool-call-object ::= " + alternatives + "\n";
  switch (format) {
    case ToolCallFormat::kHermes:
      rules += "tool-call ::= \"<tool_call>\\n\" tool-call-object \"\\n</tool_call>\"\n";
      rules += parallel ? "root ::= tool-call ( \"\\n\" tool-call )*\n" : "root ::= tool-call\n";
      break;
    case ToolCallFormat::kLlama3:
      rules += "root ::= tool-call-object\n";  // the format has one call per reply
      break;
    case ToolCallFormat::kMistral:
      rules += parallel ? "root ::= \"[TOOL_CALLS][\" tool-call-object ( \", \" tool-call-object )* \"]\"\n"
                        : "root ::= \"[TOOL_CALLS][\" tool-call-object \"]\"\n";
      break;
    case ToolCallFormat::kGeneric:
      rules += parallel ? "tool-calls ::= \"{\\\"tool_calls\\\": [\" tool-call-object ( \", \" tool-call-object )* \"]}\"\n"
                        : "tool-calls ::= \"{\\\"tool_calls\\\": [\" tool-call-object \"]}\"\n";
      rules += choice.kind == ToolChoice::Kind::kAuto ? "root ::= tool-calls | \"{\\\"response\\\": \" json-string \"}\"\n"
                                                      : "root ::= tool-calls\n";
      break;
    case ToolCallFormat::kLlama4:
      // As the template writes an assistant's calls: objects one after another.
      rules += parallel ? "root ::= tool-call-object ( tool-call-object )*\n" : "root ::= tool-call-object\n";
      break;
    case ToolCallFormat::kQwen3Coder:  // handled above
    case ToolCallFormat::kNone:
      return make_field_error("tools", "this chat template has no tool-call format pagoda knows");
  }
  return rules;
}

ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view text, const std::vector<ToolSpec>* tools) {
  ParsedReply out;
  if (format == ToolCallFormat::kLlama4) return parse_llama4(text);
  if (format == ToolCallFormat::kHermes || format == ToolCallFormat::kQwen3Coder) {
    const bool xml = format == ToolCallFormat::kQwen3Coder;
    size_t at = 0;
    while (at < text.size()) {
      const size_t open = text.find(kHermesOpen, at);
      if (open == std::string_view::npos) break;
      size_t close = text.find(kHermesClose, open);
      // A reply cut off (max_tokens) inside the closing tag still carries a complete call.
      const size_t body_end = close == std::string_view::npos ? text.size() - partial_marker_suffix(text, kHermesClose)
                                                              : close;
      const std::string_view body = trim(text.substr(open + kHermesOpen.size(), body_end - open - kHermesOpen.size()));
      std::optional<ParsedToolCall> call;
      if (xml) {
        call = parse_xml_call(body, tools);
      } else {
        call = tool_call_from_json(ojson::parse(body, nullptr, /*allow_exceptions=*/false));
      }
      const size_t end = close == std::string_view::npos ? text.size() : close + kHermesClose.size();
      if (call) {
        out.content += text.substr(at, open - at);
        out.calls.push_back(std::move(*call));
      } else {
        out.content += text.substr(at, end - at);
      }
      at = end;
    }
    if (at < text.size()) out.content += text.substr(at);
    if (!out.calls.empty()) out.content = std::string(trim(out.content));
    return out;
  }
  if (format == ToolCallFormat::kLlama3) {
    std::string_view body = trim(text);
    if (body.substr(0, kPythonTag.size()) == kPythonTag) body = trim(body.substr(kPythonTag.size()));
    const auto j = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
    if (auto call = tool_call_from_json(j); call && (j.contains("parameters") || j.contains("arguments"))) {
      out.calls.push_back(std::move(*call));
      return out;
    }
    out.content = std::string(text);
    return out;
  }
  if (format == ToolCallFormat::kGeneric) return parse_generic_reply(text);
  if (format == ToolCallFormat::kMistral) {
    const size_t marker = text.find(kMistralMarker);
    if (marker != std::string_view::npos) {
      const auto j = ojson::parse(trim(text.substr(marker + kMistralMarker.size())), nullptr, false);
      if (j.is_array() && !j.empty()) {
        std::vector<ParsedToolCall> calls;
        for (const ojson& c : j)
          if (auto call = tool_call_from_json(c)) calls.push_back(std::move(*call));
        if (calls.size() == j.size()) {
          out.content = std::string(trim(text.substr(0, marker)));
          out.calls = std::move(calls);
          return out;
        }
      }
    }
  }
  out.content = std::string(text);
  return out;
}

size_t releasable_content(ToolCallFormat format, std::string_view text, bool* decided) {
  switch (format) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwen3Coder:
    case ToolCallFormat::kMistral: {
      const std::string_view marker = format == ToolCallFormat::kMistral ? kMistralMarker : kHermesOpen;
      const size_t at = text.find(marker);
      if (at != std::string_view::npos) return at;
      return text.size() - partial_marker_suffix(text, marker);
    }
    case ToolCallFormat::kLlama3:
    case ToolCallFormat::kLlama4: {
      if (*decided) return text.size();
      const std::string_view t = trim(text);
      if (t.empty()) return 0;
      const std::string_view tag = format == ToolCallFormat::kLlama3 ? kPythonTag : kPythonStart;
      const bool may_be_call =
          t.front() == '{' || (t.size() < tag.size() ? tag.substr(0, t.size()) == t : t.substr(0, tag.size()) == tag);
      if (may_be_call) return 0;
      *decided = true;
      return text.size();
    }
    case ToolCallFormat::kGeneric:
      return 0;  // the reply is one JSON object: its message streams decoded (generic_response_text)
    case ToolCallFormat::kNone: break;
  }
  return text.size();
}

std::string tool_call_id(ToolCallFormat format, std::string_view response_id, int32_t choice, int32_t index) {
  const std::string seed = std::string(response_id) + "/" + std::to_string(choice) + "/" + std::to_string(index);
  const Sha256Digest digest = sha256(seed);
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  if (format == ToolCallFormat::kMistral) {
    for (int i = 0; i < 9; ++i) id += kAlnum[digest[i] % 62];
    return id;
  }
  id = "call_";
  for (int i = 0; i < 12; ++i) {
    id += kHex[digest[i] >> 4];
    id += kHex[digest[i] & 15];
  }
  return id;
}

}  // namespace pagoda
