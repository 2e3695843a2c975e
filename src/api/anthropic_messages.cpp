#include "api/anthropic_messages.h"

#include <map>

#include "api/request_json.h"

namespace pagoda {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

bool one_of(const std::string& key, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

// cache_control: {"type": "ephemeral", "ttl"?}; accepted (pagoda caches every prompt's blocks by itself).
Status check_cache_control(const ojson& v, const std::string& where) {
  if (v.is_null()) return Status::success();
  if (!v.is_object() || !v.contains("type") || v["type"] != "ephemeral")
    return make_field_error("messages", "'" + where + ".cache_control' must be {\"type\": \"ephemeral\"}");
  return Status::success();
}

// A text block list (system, tool_result content): its text joined. Errors name `param` and `where`.
Result<std::string> text_blocks(const ojson& v, const std::string& param, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) return make_field_error(param, "'" + where + "' must be a string or a list of text blocks");
  std::string text;
  for (size_t j = 0; j < v.size(); ++j) {
    const ojson& b = v[j];
    const std::string at = where + "[" + std::to_string(j) + "]";
    if (!b.is_object() || b.value("type", "") != "text" || !b.contains("text") || !b["text"].is_string())
      return make_field_error(param, "'" + at + "' must be a text block {\"type\": \"text\", \"text\": ...}");
    for (const auto& [key, value] : b.items()) {
      if (key == "cache_control") PAGODA_RETURN_IF_ERROR(check_cache_control(value, at));
      else if (key != "type" && key != "text" && !value.is_null() && !(key == "citations" && value.is_array() && value.empty()))
        return make_field_error(param, "'" + at + "." + key + "' is not supported");
    }
    if (!text.empty()) text += "\n";
    text += b["text"].get<std::string>();
  }
  return text;
}

Status translate_messages(const ojson& in, ojson& out) {
  if (!in.is_array() || in.empty()) return make_field_error("messages", "'messages' is required: a non-empty list");
  for (size_t i = 0; i < in.size(); ++i) {
    const ojson& m = in[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return make_field_error("messages", "'" + where + "' must be an object with a 'role'");
    for (const auto& [key, value] : m.items())
      if (key != "role" && key != "content" && !value.is_null())
        return make_field_error("messages", "'" + where + "." + key + "' is not supported");
    const std::string role = m["role"].get<std::string>();
    if (role != "user" && role != "assistant")
      return make_field_error("messages", "'" + where + ".role' must be \"user\" or \"assistant\" (the system " +
                                              "prompt goes in 'system')");
    if (!m.contains("content")) return make_field_error("messages", "'" + where + ".content' is required");
    const ojson& content = m["content"];
    if (content.is_string()) {
      out.push_back({{"role", role}, {"content", content}});
      continue;
    }
    if (!content.is_array()) return make_field_error("messages", "'" + where + ".content' must be a string or a list of blocks");
    std::string text;
    bool has_text = false;
    ojson calls = ojson::array();
    auto flush_text = [&] {
      if (!has_text) return;
      out.push_back({{"role", role}, {"content", text}});
      text.clear();
      has_text = false;
    };
    for (size_t j = 0; j < content.size(); ++j) {
      const ojson& b = content[j];
      const std::string at = where + ".content[" + std::to_string(j) + "]";
      if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
        return make_field_error("messages", "'" + at + "' must be a block with a 'type'");
      const std::string type = b["type"].get<std::string>();
      if (b.contains("cache_control")) PAGODA_RETURN_IF_ERROR(check_cache_control(b["cache_control"], at));
      auto check_keys = [&](std::initializer_list<const char*> keys) -> Status {
        for (const auto& [key, value] : b.items())
          if (key != "type" && key != "cache_control" && !value.is_null() && !one_of(key, keys) &&
              !(key == "citations" && value.is_array() && value.empty()))
            return make_field_error("messages", "'" + at + "." + key + "' is not supported");
        return Status::success();
      };
      if (type == "text") {
        PAGODA_RETURN_IF_ERROR(check_keys({"text"}));
        if (!b.contains("text") || !b["text"].is_string())
          return make_field_error("messages", "'" + at + ".text' must be a string");
        text += b["text"].get<std::string>();
        has_text = true;
      } else if (type == "tool_use") {
        PAGODA_RETURN_IF_ERROR(check_keys({"id", "name", "input"}));
        if (role != "assistant") return make_field_error("messages", "'" + at + "': tool_use blocks belong to assistant messages");
        if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string() ||
            !b.contains("input") || !b["input"].is_object())
          return make_field_error("messages", "'" + at + "' must have a string 'id' and 'name' and an object 'input'");
        calls.push_back({{"id", b["id"]}, {"type", "function"},
                         {"function", {{"name", b["name"]}, {"arguments", b["input"].dump()}}}});
      } else if (type == "tool_result") {
        PAGODA_RETURN_IF_ERROR(check_keys({"tool_use_id", "content", "is_error"}));
        if (role != "user") return make_field_error("messages", "'" + at + "': tool_result blocks belong to user messages");
        if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
          return make_field_error("messages", "'" + at + ".tool_use_id' must be a string");
        std::string result;
        if (field_set(b, "content")) {
          auto r = text_blocks(b["content"], "messages", at + ".content");
          if (!r.ok()) return r.error();
          result = *r;
        }
        if (field_set(b, "is_error")) {
          if (!b["is_error"].is_boolean()) return make_field_error("messages", "'" + at + ".is_error' must be true or false");
          if (b["is_error"].get<bool>()) result = "Error: " + result;
        }
        flush_text();
        out.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
      } else {
        return make_field_error("messages", "'" + at + ".type' \"" + type + "\" is not supported: pagoda takes " +
                                                "text, tool_use and tool_result blocks");
      }
    }
    if (role == "assistant") {
      ojson msg = {{"role", "assistant"}, {"content", has_text ? ojson(text) : ojson(nullptr)}};
      if (!calls.empty()) msg["tool_calls"] = calls;
      if (has_text || !calls.empty()) out.push_back(std::move(msg));
    } else {
      flush_text();
    }
  }
  return Status::success();
}

Result<ojson> translate_anthropic_tools(const ojson& tools) {
  if (!tools.is_array()) return make_field_error("tools", "'tools' must be a list");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return make_field_error("tools", "'" + where + "' must be an object");
    if (field_set(t, "type") && t["type"] != "custom")
      return make_field_error("tools", "'" + where + ".type' " + t["type"].dump() + " is not supported: pagoda " +
                                           "serves custom (client) tools only");
    ojson fn = ojson::object();
    for (const auto& [key, value] : t.items()) {
      if (value.is_null() || key == "type") continue;
      if (key == "cache_control") {
        PAGODA_RETURN_IF_ERROR(check_cache_control(value, where));
      } else if (key == "name" || key == "description") {
        fn[key] = value;
      } else if (key == "input_schema") {
        fn["parameters"] = value;
      } else {
        return make_field_error("tools", "'" + where + "." + key + "' is not supported");
      }
    }
    if (!fn.contains("name")) return make_field_error("tools", "'" + where + ".name' is required");
    if (!fn.contains("parameters")) return make_field_error("tools", "'" + where + ".input_schema' is required");
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

Status translate_anthropic_tool_choice(const ojson& c, ojson& chat) {
  if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
    return make_field_error("tool_choice", "'tool_choice' must be an object with a 'type' (auto, any, tool, none)");
  const std::string type = c["type"].get<std::string>();
  for (const auto& [key, value] : c.items())
    if (key != "type" && key != "name" && key != "disable_parallel_tool_use" && !value.is_null())
      return make_field_error("tool_choice", "'tool_choice." + key + "' is not supported");
  if (field_set(c, "disable_parallel_tool_use")) {
    if (!c["disable_parallel_tool_use"].is_boolean() || type == "none")
      return make_field_error("tool_choice", "'tool_choice.disable_parallel_tool_use' must be true or false (not with none)");
    chat["parallel_tool_calls"] = !c["disable_parallel_tool_use"].get<bool>();
  }
  if (type == "auto") {
    chat["tool_choice"] = "auto";
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "none") {
    chat["tool_choice"] = "none";
  } else if (type == "tool") {
    if (!field_set(c, "name") || !c["name"].is_string())
      return make_field_error("tool_choice", "'tool_choice.name' is required with type \"tool\"");
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
  } else {
    return make_field_error("tool_choice", "'tool_choice.type' must be auto, any, tool or none");
  }
  if (type != "tool" && field_set(c, "name"))
    return make_field_error("tool_choice", "'tool_choice.name' goes with type \"tool\" only");
  return Status::success();
}

class AnthropicDialect final : public ChatDialect {
 public:
  explicit AnthropicDialect(const DialectContext& ctx) : ctx_(ctx) {
    const size_t dash = ctx_.id.rfind('-');
    msg_id_ = "msg_" + (dash == std::string::npos ? ctx_.id : ctx_.id.substr(dash + 1));
  }

  std::string param_name(const std::string& p) const override {
    if (p == "max_completion_tokens") return "max_tokens";
    if (p == "stop") return "stop_sequences";
    if (p == "response_format") return "output_config";
    return p;
  }

  std::string stream_open(int64_t prompt_tokens) override {
    json message = message_object(json::array(), nullptr, nullptr, prompt_tokens, 0);
    return sse_event("message_start", {{"type", "message_start"}, {"message", message}});
  }

  std::string stream_chunk(const json& chunk) override {
    std::string out;
    if (!chunk.contains("choices") || chunk["choices"].empty()) return out;
    const json& c = chunk["choices"][0];
    const json& d = c.contains("delta") ? c["delta"] : json::object();
    if (d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty()) {
      if (open_ < 0 || !open_is_text_) {
        out += close_open();
        open_ = next_index_++;
        open_is_text_ = true;
        out += sse_event("content_block_start", {{"type", "content_block_start"}, {"index", open_},
                                                 {"content_block", {{"type", "text"}, {"text", ""}}}});
      }
      out += sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", open_},
                                               {"delta", {{"type", "text_delta"}, {"text", d["content"]}}}});
    }
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) {
        const int32_t index = t.value("index", 0);
        if (t.contains("id")) {
          out += close_open();
          open_ = next_index_++;
          open_is_text_ = false;
          call_blocks_[index] = open_;
          out += sse_event("content_block_start",
                           {{"type", "content_block_start"}, {"index", open_},
                            {"content_block", {{"type", "tool_use"}, {"id", tool_use_id(t["id"].get<std::string>())},
                                               {"name", t["function"]["name"]}, {"input", json::object()}}}});
        }
        const std::string args = t.contains("function") ? t["function"].value("arguments", "") : "";
        auto it = call_blocks_.find(index);
        if (args.empty() || it == call_blocks_.end()) continue;
        out += sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", it->second},
                                                 {"delta", {{"type", "input_json_delta"}, {"partial_json", args}}}});
      }
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) {
      finish_ = c["finish_reason"].get<std::string>();
      stop_string_ = c.contains("stop_reason") ? c["stop_reason"] : json(nullptr);
    }
    return out;
  }

  std::string stream_close(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) override {
    std::string out = close_open();
    // message_start went out before the engine looked in its cache, so the split of the input between cache reads
    // and the rest comes here, as the API's message_delta usage allows.
    json usage = {{"output_tokens", completion_tokens}};
    if (cached_tokens >= 0) {
      usage["input_tokens"] = prompt_tokens - cached_tokens;
      usage["cache_read_input_tokens"] = cached_tokens;
    }
    out += sse_event("message_delta", {{"type", "message_delta"},
                                       {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_sequence()}}},
                                       {"usage", std::move(usage)}});
    out += sse_event("message_stop", {{"type", "message_stop"}});
    return out;
  }

  std::string stream_error(const std::string& message) override {
    return sse_event("error", anthropic_error_body(500, message));
  }

  json response(const json& chat) override {
    const json& c = chat["choices"][0];
    const json& m = c["message"];
    json content = json::array();
    if (m.contains("content") && m["content"].is_string() && !m["content"].get<std::string>().empty())
      content.push_back({{"type", "text"}, {"text", m["content"]}});
    if (m.contains("tool_calls"))
      for (const json& t : m["tool_calls"]) {
        json input = json::parse(t["function"]["arguments"].get<std::string>(), nullptr, false);
        content.push_back({{"type", "tool_use"}, {"id", tool_use_id(t["id"].get<std::string>())},
                           {"name", t["function"]["name"]}, {"input", input.is_object() ? input : json::object()}});
      }
    finish_ = c["finish_reason"].is_string() ? c["finish_reason"].get<std::string>() : "";
    stop_string_ = c.contains("stop_reason") ? c["stop_reason"] : json(nullptr);
    return message_object(content, stop_reason(), stop_sequence(), chat["usage"]["prompt_tokens"].get<int64_t>(),
                          chat["usage"]["completion_tokens"].get<int64_t>(), cached_tokens_of(chat));
  }

 private:
  // "call_<hex>" -> "toolu_<hex>": Anthropic's id form for the same call.
  static std::string tool_use_id(const std::string& call_id) {
    return "toolu_" + (call_id.rfind("call_", 0) == 0 ? call_id.substr(5) : call_id);
  }

  std::string close_open() {
    if (open_ < 0) return {};
    std::string out = sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", open_}});
    open_ = -1;
    return out;
  }

  json stop_reason() const {
    if (finish_ == "tool_calls") return "tool_use";
    if (finish_ == "length") return "max_tokens";
    if (finish_ == "stop") return stop_string_.is_string() ? "stop_sequence" : "end_turn";
    return "end_turn";
  }
  json stop_sequence() const { return finish_ == "stop" && stop_string_.is_string() ? stop_string_ : json(nullptr); }

  // Anthropic's usage counts cache reads apart: input_tokens + cache_read_input_tokens is the whole prompt.
  // cached < 0 (not known yet: message_start) counts the whole prompt as input.
  json message_object(json content, json stop_reason, json stop_sequence, int64_t prompt_tokens, int64_t output_tokens,
                      int64_t cached = -1) const {
    const int64_t cache_read = std::max<int64_t>(cached, 0);
    return {{"id", msg_id_},
            {"type", "message"},
            {"role", "assistant"},
            {"model", ctx_.model},
            {"content", std::move(content)},
            {"stop_reason", std::move(stop_reason)},
            {"stop_sequence", std::move(stop_sequence)},
            {"usage", {{"input_tokens", prompt_tokens - cache_read}, {"output_tokens", output_tokens},
                       {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", cache_read}}}};
  }

  DialectContext ctx_;
  std::string msg_id_;
  int32_t open_ = -1;  // the open content block's index
  bool open_is_text_ = false;
  int32_t next_index_ = 0;
  std::map<int32_t, int32_t> call_blocks_;  // chat tool-call index -> block index
  std::string finish_;
  json stop_string_;
};

}  // namespace

json anthropic_error_body(int status, const std::string& message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 403 ? "permission_error"
                     : status == 404 ? "not_found_error"
                     : status == 413 ? "request_too_large"
                     : status == 429 ? "rate_limit_error"
                     : status == 503 ? "overloaded_error"
                     : status >= 500 ? "api_error"
                                     : "invalid_request_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

Result<DialectRequest> translate_anthropic_request(const ojson& body, const DialectContext& ctx, bool count_tokens) {
  if (!body.is_object()) return make_error("the request body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (value.is_null()) continue;
    const bool shared = one_of(key, {"model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control",
                                     "output_config"});
    const bool generation = one_of(key, {"max_tokens", "stop_sequences", "temperature", "top_p", "top_k", "stream",
                                         "metadata", "service_tier"});
    if (shared || (!count_tokens && generation)) continue;
    return make_field_error(key, "unsupported field '" + key + "': this server does not implement it");
  }
  ojson chat = ojson::object();
  if (!field_set(body, "model") || !body["model"].is_string())
    return make_field_error("model", "'model' is required (a string)");
  chat["model"] = body["model"];
  if (field_set(body, "thinking") &&
      !(body["thinking"].is_object() && body["thinking"].value("type", "") == "disabled"))
    return make_field_error("thinking", "'thinking' is not supported: the served model has no extended thinking");
  if (field_set(body, "cache_control")) {  // the request-wide form of the blocks' hint: accepted, as there
    const ojson& cc = body["cache_control"];
    if (!cc.is_object() || !cc.contains("type") || cc["type"] != "ephemeral")
      return make_field_error("cache_control", "'cache_control' must be {\"type\": \"ephemeral\"}");
  }
  // output_config.format: structured outputs (a JSON Schema the reply follows), as response_format json_schema.
  if (field_set(body, "output_config")) {
    const ojson& oc = body["output_config"];
    if (!oc.is_object()) return make_field_error("output_config", "'output_config' must be an object");
    for (const auto& [key, value] : oc.items()) {
      if (value.is_null()) continue;
      if (key != "format")
        return make_field_error("output_config", "'output_config." + key + "' is not supported");
      if (!value.is_object() || value.value("type", "") != "json_schema" || !value.contains("schema") ||
          !value["schema"].is_object())
        return make_field_error("output_config", "'output_config.format' must be {\"type\": \"json_schema\", " +
                                                     std::string("\"schema\": {...}}"));
      for (const auto& [k, v] : value.items())
        if (k != "type" && k != "schema" && !v.is_null())
          return make_field_error("output_config", "'output_config.format." + k + "' is not supported");
      chat["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "output"}, {"schema", value["schema"]}, {"strict", true}}}};
    }
  }
  ojson messages = ojson::array();
  if (field_set(body, "system")) {
    auto system = text_blocks(body["system"], "system", "system");
    if (!system.ok()) return system.error();
    messages.push_back({{"role", "system"}, {"content", *system}});
  }
  if (!body.contains("messages")) return make_field_error("messages", "'messages' is required");
  PAGODA_RETURN_IF_ERROR(translate_messages(body["messages"], messages));
  chat["messages"] = messages;
  if (field_set(body, "tools")) {
    auto tools = translate_anthropic_tools(body["tools"]);
    if (!tools.ok()) return tools.error();
    if (!tools->empty()) chat["tools"] = *tools;
  }
  if (field_set(body, "tool_choice")) {
    PAGODA_RETURN_IF_ERROR(translate_anthropic_tool_choice(body["tool_choice"], chat));
    if (!chat.contains("tools")) {
      if (chat["tool_choice"] != "auto" && chat["tool_choice"] != "none")
        return make_field_error("tool_choice", "'tool_choice' needs 'tools'");
      chat.erase("tool_choice");
      chat.erase("parallel_tool_calls");
    }
  }
  if (!count_tokens) {
    if (!field_set(body, "max_tokens")) return make_field_error("max_tokens", "'max_tokens' is required");
    const ojson& mt = body["max_tokens"];
    if (!mt.is_number_integer() || mt.get<int64_t>() < 1)
      return make_field_error("max_tokens", "'max_tokens' must be an integer of at least 1");
    chat["max_completion_tokens"] = mt;
    if (field_set(body, "stop_sequences")) {
      const ojson& s = body["stop_sequences"];
      if (!s.is_array()) return make_field_error("stop_sequences", "'stop_sequences' must be a list of strings");
      for (const ojson& x : s)
        if (!x.is_string() || x.get<std::string>().empty())
          return make_field_error("stop_sequences", "'stop_sequences' must be a list of non-empty strings");
      if (!s.empty()) chat["stop"] = s;
    }
    for (const char* key : {"temperature", "top_p", "top_k", "stream"})
      if (field_set(body, key)) chat[key] = body[key];
    if (field_set(body, "metadata")) {
      const ojson& m = body["metadata"];
      if (!m.is_object()) return make_field_error("metadata", "'metadata' must be an object");
      for (const auto& [key, value] : m.items()) {
        if (value.is_null()) continue;
        if (key != "user_id" || !value.is_string())
          return make_field_error("metadata", "'metadata' takes only 'user_id' (a string)");
        chat["user"] = value;
      }
    }
    if (field_set(body, "service_tier") && body["service_tier"] != "auto" && body["service_tier"] != "standard_only")
      return make_field_error("service_tier", "'service_tier' must be \"auto\" or \"standard_only\"");
  } else {
    chat["max_completion_tokens"] = 1;
  }
  DialectRequest out;
  out.chat_body = std::move(chat);
  out.dialect = std::make_unique<AnthropicDialect>(ctx);
  return out;
}

}  // namespace pagoda
