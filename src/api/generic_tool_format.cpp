#include "api/generic_tool_format.h"

#include "api/request_json.h"
#include "api/tool_call_stream.h"

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_ws(std::string_view t, size_t i) {
  while (i < t.size() && is_ws(t[i])) ++i;
  return i;
}

// Appends code point cp as UTF-8.
void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Four hex digits at t[i..i+4) as a number; -1 when they are not all there or not hex.
int32_t hex4(std::string_view t, size_t i) {
  if (i + 4 > t.size()) return -1;
  int32_t v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    const char c = t[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The text of a message's content: a string, or text parts joined.
std::string content_text(const ojson& m) {
  if (!m.contains("content")) return {};
  const ojson& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  std::string text;
  if (c.is_array())
    for (const ojson& part : c)
      if (part.is_object() && part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
  return text;
}

}  // namespace

ojson generic_reply_schema(const std::vector<ToolSpec>& tools, const ToolChoice& choice, bool parallel) {
  ojson calls = ojson::array();
  for (const ToolSpec& t : tools) {
    if (choice.kind == ToolChoice::Kind::kNamed && t.name != choice.name) continue;
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", t.name}}}, {"arguments", t.parameters}}},
                     {"required", {"name", "arguments"}}});
  }
  ojson list = {{"type", "array"}, {"items", calls.size() == 1 ? calls[0] : ojson{{"anyOf", calls}}}, {"minItems", 1}};
  if (!parallel) list["maxItems"] = 1;
  ojson call_reply = {{"type", "object"}, {"properties", {{"tool_calls", list}}}, {"required", {"tool_calls"}}};
  if (choice.kind != ToolChoice::Kind::kAuto) return call_reply;
  ojson message_reply = {{"type", "object"},
                         {"properties", {{"response", {{"type", "string"}}}}},
                         {"required", {"response"}}};
  return {{"anyOf", {call_reply, message_reply}}};
}

std::string generic_tool_instructions(const std::vector<ToolSpec>& tools, const ToolChoice& choice, bool parallel) {
  ojson listed = ojson::array();
  for (const ToolSpec& t : tools) {
    ojson entry = {{"name", t.name}};
    if (!t.description.empty()) entry["description"] = t.description;
    entry["parameters"] = t.parameters;
    listed.push_back(std::move(entry));
  }
  std::string text = "You can call these tools:\n" + listed.dump() + "\n\n";
  if (choice.kind == ToolChoice::Kind::kNone)
    return text + "Do not call a tool in this reply: answer the user in plain text.";
  text += "Reply with one JSON object, and nothing else, that follows this JSON Schema:\n" +
          generic_reply_schema(tools, choice, parallel).dump() + "\n\n";
  text += parallel ? "To call tools, reply {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <its arguments>}, ...]}."
                   : "To call a tool, reply {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <its arguments>}]}.";
  if (choice.kind == ToolChoice::Kind::kAuto)
    text += " To answer the user directly, reply {\"response\": <your answer as a string>}.";
  text += " A tool's result comes back in a message {\"tool_response\": ...}";
  text += choice.kind == ToolChoice::Kind::kAuto ? ": once the results answer the question, reply with {\"response\": ...}."
                                                 : ".";
  return text;
}

bool has_tool_history(const ojson& messages) {
  if (!messages.is_array()) return false;
  for (const ojson& m : messages) {
    if (!m.is_object()) continue;
    if (m.contains("role") && m["role"] == "tool") return true;
    if (m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty()) return true;
  }
  return false;
}

ojson generic_tool_messages(const ojson& messages, const std::string& instructions, bool system_turn,
                            bool wrap_replies) {
  ojson out = ojson::array();
  bool last_from_tool = false;  // the last message of `out` is (or holds) a tool result
  for (const ojson& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      out.push_back(m);  // left for the renderer's own check to name
      last_from_tool = false;
      continue;
    }
    const std::string role = m["role"].get<std::string>();
    if (role == "tool") {
      ojson result = ojson::object();
      if (field_set(m, "tool_call_id")) result["tool_call_id"] = m["tool_call_id"];
      if (field_set(m, "name")) result["name"] = m["name"];
      result["content"] = content_text(m);
      const std::string text = ojson{{"tool_response", result}}.dump();
      if (!out.empty() && out.back()["role"] == "user") {
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + text;
      } else {
        out.push_back({{"role", "user"}, {"content", text}});
      }
      last_from_tool = true;
      continue;
    }
    std::string text = content_text(m);
    if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty()) {
      ojson calls = ojson::array();
      for (const ojson& call : m["tool_calls"]) {
        const ojson& fn = call.is_object() && call.contains("function") ? call["function"] : call;
        ojson c = {{"name", fn.is_object() && fn.contains("name") ? fn["name"] : ojson("")}};
        c["arguments"] = fn.is_object() && fn.contains("arguments") ? fn["arguments"] : ojson::object();
        calls.push_back(std::move(c));
      }
      const std::string reply = ojson{{"tool_calls", calls}}.dump();
      text = text.empty() ? reply : text + "\n" + reply;
    } else if (role == "assistant" && wrap_replies) {
      text = ojson{{"response", text}}.dump();
    }
    if (role == "user" && last_from_tool && !out.empty() && out.back()["role"] == "user") {
      out.back()["content"] = out.back()["content"].get<std::string>() + "\n" + text;
    } else {
      out.push_back({{"role", role}, {"content", text}});
    }
    last_from_tool = false;
  }
  if (instructions.empty()) return out;
  if (system_turn) {
    if (!out.empty() && out[0].is_object() && out[0].contains("role") && out[0]["role"] == "system") {
      const std::string own = out[0]["content"].is_string() ? out[0]["content"].get<std::string>() : std::string();
      out[0]["content"] = own.empty() ? instructions : own + "\n\n" + instructions;
    } else {
      out.insert(out.begin(), ojson{{"role", "system"}, {"content", instructions}});
    }
    return out;
  }
  // No system turn: a leading system message (if any) and the instructions open the first user message.
  std::string prefix = instructions;
  if (!out.empty() && out[0].is_object() && out[0].contains("role") && out[0]["role"] == "system") {
    const std::string own = out[0]["content"].is_string() ? out[0]["content"].get<std::string>() : std::string();
    if (!own.empty()) prefix = own + "\n\n" + instructions;
    out.erase(out.begin());
  }
  for (ojson& m : out) {
    if (m.is_object() && m.contains("role") && m["role"] == "user") {
      m["content"] = prefix + "\n\n" + (m["content"].is_string() ? m["content"].get<std::string>() : std::string());
      return out;
    }
  }
  out.insert(out.begin(), ojson{{"role", "user"}, {"content", prefix}});
  return out;
}

std::string generic_response_text(std::string_view t) {
  size_t i = skip_ws(t, 0);
  if (i >= t.size() || t[i] != '{') return {};
  i = skip_ws(t, i + 1);
  static constexpr std::string_view kKey = "\"response\"";
  if (t.substr(i, kKey.size()) != kKey) return {};
  i = skip_ws(t, i + kKey.size());
  if (i >= t.size() || t[i] != ':') return {};
  i = skip_ws(t, i + 1);
  if (i >= t.size() || t[i] != '"') return {};
  std::string out;
  for (++i; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 1 >= t.size()) break;  // an escape cut in half
    const char e = t[i + 1];
    const char* simple = nullptr;
    switch (e) {
      case '"': simple = "\""; break;
      case '\\': simple = "\\"; break;
      case '/': simple = "/"; break;
      case 'b': simple = "\b"; break;
      case 'f': simple = "\f"; break;
      case 'n': simple = "\n"; break;
      case 'r': simple = "\r"; break;
      case 't': simple = "\t"; break;
      default: break;
    }
    if (simple) {
      out += simple;
      ++i;
      continue;
    }
    if (e != 'u') return out;  // not JSON: stop where it breaks
    const int32_t hi = hex4(t, i + 2);
    if (hi < 0) return out;
    uint32_t cp = static_cast<uint32_t>(hi);
    size_t consumed = 6;
    if (hi >= 0xD800 && hi <= 0xDBFF) {  // a surrogate pair: wait for its low half
      if (i + 12 > t.size()) return out;
      const int32_t lo = t[i + 6] == '\\' && t[i + 7] == 'u' ? hex4(t, i + 8) : -1;
      if (lo < 0xDC00 || lo > 0xDFFF) return out;
      cp = 0x10000 + ((static_cast<uint32_t>(hi) - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
      consumed = 12;
    }
    append_utf8(out, cp);
    i += consumed - 1;
  }
  return out;
}

ParsedReply parse_generic_reply(std::string_view text) {
  ParsedReply out;
  const auto j = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array() && !j["tool_calls"].empty()) {
    std::vector<ParsedToolCall> calls;
    for (const ojson& c : j["tool_calls"])
      if (auto call = tool_call_from_json(c)) calls.push_back(std::move(*call));
    if (calls.size() == j["tool_calls"].size()) {
      out.calls = std::move(calls);
      return out;
    }
  }
  if (j.is_object() && j.size() == 1 && j.contains("response") && j["response"].is_string()) {
    out.content = j["response"].get<std::string>();
    return out;
  }
  if (!j.is_discarded()) {  // valid JSON of another shape: the model's text as it is
    out.content = std::string(text);
    return out;
  }
  // Cut off: the calls that closed, or the message as far as it went.
  for (const ToolCallScan& s : scan_tool_calls(ToolCallFormat::kGeneric, text)) {
    if (s.object_end == std::string_view::npos) break;
    const auto c = ojson::parse(text.substr(s.object_begin, s.object_end - s.object_begin), nullptr, false);
    if (auto call = tool_call_from_json(c)) out.calls.push_back(std::move(*call));
  }
  if (!out.calls.empty()) return out;
  std::string message = generic_response_text(text);
  out.content = message.empty() && text.find("\"response\"") == std::string_view::npos ? std::string(text) : message;
  return out;
}

}  // namespace pagoda
