#include "api/responses_api.h"

#include <map>
#include <vector>

#include "api/openai_response.h"
#include "api/request_json.h"

namespace pagoda {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// Fields of the Responses API pagoda implements; the others are refused by name, or accepted only at the value
// that changes nothing (kNeutral).
constexpr const char* kImplemented[] = {"model",       "input",  "instructions",      "tools",  "tool_choice",
                                        "parallel_tool_calls", "text",   "max_output_tokens", "temperature", "top_p",
                                        "stream",      "stream_options", "metadata",          "store",  "user",
                                        "truncation",  "include", "background",       "reasoning", "service_tier",
                                        "prompt_cache_key", "safety_identifier"};

bool implemented(const std::string& key) {
  for (const char* k : kImplemented)
    if (key == k) return true;
  return false;
}

// The text of a content list of input_text / output_text parts; an error names the part.
Result<std::string> parts_text(const ojson& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return make_field_error("input", "'" + where + "' must be a string or a list of parts");
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const ojson& p = content[j];
    const std::string at = where + "[" + std::to_string(j) + "]";
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string())
      return make_field_error("input", "'" + at + "' must be an object with a 'type'");
    const std::string type = p["type"].get<std::string>();
    if (type != "input_text" && type != "output_text")
      return make_field_error("input", "'" + at + ".type' \"" + type + "\" is not supported: pagoda takes text parts " +
                                           "(input_text, output_text) only");
    if (!p.contains("text") || !p["text"].is_string())
      return make_field_error("input", "'" + at + ".text' must be a string");
    for (const auto& [key, value] : p.items())
      if (key != "type" && key != "text" && !(key == "annotations" && value.is_array() && value.empty()) &&
          !(key == "logprobs" && value.is_array()) && !value.is_null())
        return make_field_error("input", "'" + at + "." + key + "' is not supported");
    text += p["text"].get<std::string>();
  }
  return text;
}

// Checks an item's keys against the ones its type takes ("id" and "status" identify an item echoed back).
Status check_item_keys(const ojson& item, std::initializer_list<const char*> keys, const std::string& where) {
  for (const auto& [key, value] : item.items()) {
    if (value.is_null() || key == "type" || key == "id" || key == "status") continue;
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (!known) return make_field_error("input", "'" + where + "." + key + "' is not supported");
  }
  return Status::success();
}

// input -> chat messages.
Status translate_input(const ojson& input, ojson& messages) {
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return Status::success();
  }
  if (!input.is_array()) return make_field_error("input", "'input' must be a string or a list of items");
  for (size_t i = 0; i < input.size(); ++i) {
    const ojson& item = input[i];
    const std::string where = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return make_field_error("input", "'" + where + "' must be an object");
    const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>()
                             : item.contains("role")                         ? std::string("message")
                                                                             : std::string();
    if (type == "message") {
      PAGODA_RETURN_IF_ERROR(check_item_keys(item, {"role", "content"}, where));
      if (!item.contains("role") || !item["role"].is_string())
        return make_field_error("input", "'" + where + ".role' must be a string");
      std::string role = item["role"].get<std::string>();
      if (role == "developer") role = "system";
      if (role != "user" && role != "assistant" && role != "system")
        return make_field_error("input", "'" + where + ".role' must be user, assistant, system or developer");
      if (!item.contains("content")) return make_field_error("input", "'" + where + ".content' is required");
      auto text = parts_text(item["content"], where + ".content");
      if (!text.ok()) return text.error();
      messages.push_back({{"role", role}, {"content", *text}});
    } else if (type == "function_call") {
      PAGODA_RETURN_IF_ERROR(check_item_keys(item, {"call_id", "name", "arguments"}, where));
      for (const char* k : {"call_id", "name", "arguments"})
        if (!item.contains(k) || !item[k].is_string())
          return make_field_error("input", "'" + where + "." + k + "' must be a string");
      const ojson call = {{"id", item["call_id"]},
                          {"type", "function"},
                          {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
      // Calls of one turn join the assistant message before them.
      if (!messages.empty() && messages.back()["role"] == "assistant") {
        ojson& last = messages.back();
        if (!last.contains("tool_calls")) last["tool_calls"] = ojson::array();
        last["tool_calls"].push_back(call);
      } else {
        messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array({call})}});
      }
    } else if (type == "function_call_output") {
      PAGODA_RETURN_IF_ERROR(check_item_keys(item, {"call_id", "output"}, where));
      if (!item.contains("call_id") || !item["call_id"].is_string())
        return make_field_error("input", "'" + where + ".call_id' must be a string");
      if (!item.contains("output")) return make_field_error("input", "'" + where + ".output' is required");
      auto text = parts_text(item["output"], where + ".output");
      if (!text.ok()) return text.error();
      messages.push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", *text}});
    } else if (type.empty()) {
      return make_field_error("input", "'" + where + "' needs a 'type' (message, function_call, function_call_output)");
    } else {
      return make_field_error("input", "'" + where + ".type' \"" + type + "\" is not supported: pagoda takes " +
                                           "message, function_call and function_call_output items");
    }
  }
  return Status::success();
}

Result<ojson> translate_responses_tools(const ojson& tools) {
  if (!tools.is_array()) return make_field_error("tools", "'tools' must be a list");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
      return make_field_error("tools", "'" + where + "' must be an object with a 'type'");
    if (t["type"] != "function")
      return make_field_error("tools", "'" + where + ".type' \"" + t["type"].get<std::string>() +
                                           "\" is not supported: pagoda serves function tools only");
    ojson fn = ojson::object();
    for (const auto& [key, value] : t.items()) {
      if (key == "type" || value.is_null()) continue;
      if (key != "name" && key != "description" && key != "parameters" && key != "strict")
        return make_field_error("tools", "'" + where + "." + key + "' is not supported");
      fn[key] = value;
    }
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

Result<ojson> translate_responses_tool_choice(const ojson& c) {
  if (c.is_string()) return c;  // "auto" / "none" / "required", checked by the chat parser
  if (c.is_object() && c.contains("type") && c["type"] == "function" && c.contains("name") && c["name"].is_string() &&
      c.size() == 2)
    return ojson{{"type", "function"}, {"function", {{"name", c["name"]}}}};
  return make_field_error("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                         "{\"type\": \"function\", \"name\": ...}");
}

// text: {"format": {...}} -> response_format.
Status translate_text(const ojson& text, ojson& chat) {
  if (!text.is_object()) return make_field_error("text", "'text' must be an object");
  for (const auto& [key, value] : text.items()) {
    if (value.is_null()) continue;
    if (key == "verbosity") {
      if (value != "medium")
        return make_field_error("text", "'text.verbosity' other than \"medium\" is not supported");
      continue;
    }
    if (key != "format") return make_field_error("text", "'text." + key + "' is not supported");
  }
  if (!field_set(text, "format")) return Status::success();
  const ojson& f = text["format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
    return make_field_error("text", "'text.format' must be an object with a 'type'");
  const std::string type = f["type"].get<std::string>();
  if (type == "text") return Status::success();
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
    return Status::success();
  }
  if (type != "json_schema")
    return make_field_error("text", "'text.format.type' must be text, json_object or json_schema");
  ojson schema = ojson::object();
  for (const auto& [key, value] : f.items()) {
    if (key == "type" || value.is_null()) continue;
    if (key != "name" && key != "schema" && key != "strict" && key != "description")
      return make_field_error("text", "'text.format." + key + "' is not supported");
    schema[key] = value;
  }
  if (!schema.contains("name")) return make_field_error("text", "'text.format.name' is required");
  chat["response_format"] = {{"type", "json_schema"}, {"json_schema", schema}};
  return Status::success();
}

// Fields accepted only at a value that changes nothing.
Status check_neutral(const ojson& body) {
  auto refuse = [](const std::string& key, const std::string& why) {
    return make_field_error(key, "'" + key + "' " + why);
  };
  if (field_set(body, "store") && body["store"] != false)
    return refuse("store", "true is not supported: pagoda keeps no responses (send \"store\": false)");
  if (field_set(body, "truncation") && body["truncation"] != "disabled")
    return refuse("truncation", "other than \"disabled\" is not supported: a conversation that does not fit is a 400");
  if (field_set(body, "include") && !(body["include"].is_array() && body["include"].empty()))
    return refuse("include", "is not supported (pagoda has no extra output to include)");
  if (field_set(body, "background") && body["background"] != false)
    return refuse("background", "true is not supported: pagoda keeps no responses to poll");
  if (field_set(body, "reasoning")) {
    const ojson& r = body["reasoning"];
    if (!r.is_object()) return refuse("reasoning", "must be an object");
    for (const auto& [key, value] : r.items())
      if (!value.is_null()) return refuse("reasoning", "is not supported: the served model has no reasoning settings");
  }
  if (field_set(body, "service_tier") && body["service_tier"] != "auto" && body["service_tier"] != "default")
    return refuse("service_tier", "other than \"auto\" or \"default\" is not supported");
  if (field_set(body, "stream_options")) {
    const ojson& so = body["stream_options"];
    if (!so.is_object()) return refuse("stream_options", "must be an object");
    for (const auto& [key, value] : so.items()) {
      if (value.is_null()) continue;
      if (key != "include_obfuscation" || value != false)
        return refuse("stream_options", "'." + key + "' is not supported (only include_obfuscation: false)");
    }
    if (!field_set(body, "stream") || body["stream"] != true)
      return refuse("stream_options", "is only allowed with 'stream': true");
  }
  for (const char* key : {"user", "prompt_cache_key", "safety_identifier"})
    if (field_set(body, key) && !body[key].is_string()) return refuse(key, "must be a string");
  if (field_set(body, "metadata")) {
    const ojson& m = body["metadata"];
    if (!m.is_object() || m.size() > 16) return refuse("metadata", "must be an object of at most 16 string values");
    for (const auto& [key, value] : m.items())
      if (!value.is_string() || key.size() > 64 || value.get<std::string>().size() > 512)
        return refuse("metadata", "values must be strings (keys up to 64, values up to 512 characters)");
  }
  return Status::success();
}

class ResponsesDialect final : public ChatDialect {
 public:
  ResponsesDialect(const DialectContext& ctx, ojson echo) : ctx_(ctx), echo_(std::move(echo)) {
    resp_id_ = "resp_" + suffix();
  }

  std::string param_name(const std::string& p) const override {
    if (p == "messages") return "input";
    if (p == "max_completion_tokens" || p == "max_tokens") return "max_output_tokens";
    if (p == "response_format") return "text";
    return p;
  }

  std::string stream_open(int64_t) override {
    json r = response_object("in_progress", json(nullptr), json(nullptr));
    std::string out = event("response.created", {{"response", r}});
    out += event("response.in_progress", {{"response", r}});
    return out;
  }

  std::string stream_chunk(const json& chunk) override {
    std::string out;
    if (!chunk.contains("choices") || chunk["choices"].empty()) return out;
    const json& c = chunk["choices"][0];
    const json& d = c.contains("delta") ? c["delta"] : json::object();
    if (d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty()) {
      if (open_ < 0 || items_[static_cast<size_t>(open_)].type != "message") {
        out += close_open();
        out += open_message();
      }
      Item& m = items_[static_cast<size_t>(open_)];
      const std::string delta = d["content"].get<std::string>();
      m.text += delta;
      out += event("response.output_text.delta", {{"item_id", m.id}, {"output_index", open_}, {"content_index", 0},
                                                  {"delta", delta}, {"logprobs", json::array()}});
    }
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) {
        const int32_t index = t.value("index", 0);
        if (t.contains("id")) {
          out += close_open();
          const Item f = call_item(t["id"].get<std::string>(), t["function"]["name"].get<std::string>(), "");
          items_.push_back(f);
          open_ = static_cast<int32_t>(items_.size()) - 1;
          call_items_[index] = open_;
          out += event("response.output_item.added", {{"output_index", open_}, {"item", item_json(f, "in_progress")}});
        }
        const std::string args = t.contains("function") ? t["function"].value("arguments", "") : "";
        auto it = call_items_.find(index);
        if (args.empty() || it == call_items_.end()) continue;
        Item& f = items_[static_cast<size_t>(it->second)];
        f.args += args;
        out += event("response.function_call_arguments.delta",
                     {{"item_id", f.id}, {"output_index", it->second}, {"delta", args}});
      }
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) finish_ = c["finish_reason"].get<std::string>();
    return out;
  }

  std::string stream_close(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) override {
    std::string out;
    if (items_.empty()) out += open_message();  // a reply with no text still has its (empty) message
    out += close_open();
    const char* status = finish_status();
    json r = response_object(status, incomplete_details(), usage(prompt_tokens, completion_tokens, cached_tokens));
    const std::string name = std::string("response.") + (std::string(status) == "completed"    ? "completed"
                                                         : std::string(status) == "incomplete" ? "incomplete"
                                                                                               : "failed");
    out += event(name, {{"response", r}});
    return out;
  }

  std::string stream_error(const std::string& message) override {
    std::string out = event("error", {{"code", "server_error"}, {"message", message}, {"param", nullptr}});
    json r = response_object("failed", json(nullptr), json(nullptr));
    r["error"] = {{"code", "server_error"}, {"message", message}};
    out += event("response.failed", {{"response", r}});
    return out;
  }

  json response(const json& chat) override {
    const json& c = chat["choices"][0];
    const json& m = c["message"];
    // The same items the stream would have opened, without its events.
    if (m.contains("content") && m["content"].is_string() && (!m["content"].get<std::string>().empty() || !m.contains("tool_calls"))) {
      items_.push_back(message_item());
      items_.back().text = m["content"].get<std::string>();
    }
    if (m.contains("tool_calls"))
      for (const json& t : m["tool_calls"])
        items_.push_back(call_item(t["id"].get<std::string>(), t["function"]["name"].get<std::string>(),
                                   t["function"]["arguments"].get<std::string>()));
    if (items_.empty()) items_.push_back(message_item());
    finish_ = c["finish_reason"].is_string() ? c["finish_reason"].get<std::string>() : "";
    return response_object(finish_status(), incomplete_details(),
                           usage(chat["usage"]["prompt_tokens"].get<int64_t>(),
                                 chat["usage"]["completion_tokens"].get<int64_t>(), cached_tokens_of(chat)));
  }

 private:
  struct Item {
    std::string type;  // "message" or "function_call"
    std::string id;
    std::string text;  // message
    std::string call_id, name, args;  // function_call
  };

  std::string suffix() const {
    // The request id's counter ("chatcmpl-<16 hex>"): unique per server run.
    const size_t dash = ctx_.id.rfind('-');
    return dash == std::string::npos ? ctx_.id : ctx_.id.substr(dash + 1);
  }

  std::string event(const std::string& name, json data) {
    json e = {{"type", name}, {"sequence_number", seq_++}};
    for (auto& [k, v] : data.items()) e[k] = v;
    return sse_event(name, e);
  }

  // The next output item of each kind (its id numbered by its output index).
  Item message_item() const { return Item{"message", "msg_" + suffix() + "_" + std::to_string(items_.size()), "", "", "", ""}; }
  Item call_item(std::string call_id, std::string name, std::string args) const {
    return Item{"function_call", "fc_" + suffix() + "_" + std::to_string(items_.size()), "", std::move(call_id),
                std::move(name), std::move(args)};
  }

  std::string open_message() {
    const Item m = message_item();
    items_.push_back(m);
    open_ = static_cast<int32_t>(items_.size()) - 1;
    std::string out = event("response.output_item.added", {{"output_index", open_}, {"item", item_json(m, "in_progress")}});
    out += event("response.content_part.added", {{"item_id", m.id}, {"output_index", open_}, {"content_index", 0},
                                                 {"part", text_part("")}});
    return out;
  }

  std::string close_open() {
    if (open_ < 0) return {};
    const Item& it = items_[static_cast<size_t>(open_)];
    std::string out;
    if (it.type == "message") {
      out += event("response.output_text.done", {{"item_id", it.id}, {"output_index", open_}, {"content_index", 0},
                                                 {"text", it.text}, {"logprobs", json::array()}});
      out += event("response.content_part.done", {{"item_id", it.id}, {"output_index", open_}, {"content_index", 0},
                                                  {"part", text_part(it.text)}});
    } else {
      out += event("response.function_call_arguments.done",
                   {{"item_id", it.id}, {"output_index", open_}, {"name", it.name}, {"arguments", it.args}});
    }
    out += event("response.output_item.done", {{"output_index", open_}, {"item", item_json(it, item_status())}});
    open_ = -1;
    return out;
  }

  static json text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
  }

  static json item_json(const Item& it, const char* status) {
    if (it.type == "message")
      return {{"id", it.id}, {"type", "message"}, {"status", status}, {"role", "assistant"},
              {"content", std::string(status) == "in_progress" ? json::array() : json::array({text_part(it.text)})}};
    return {{"id", it.id}, {"type", "function_call"}, {"status", status}, {"call_id", it.call_id},
            {"name", it.name}, {"arguments", it.args}};
  }

  // An output item's final status: "incomplete" when max_output_tokens cut the reply off, as OpenAI marks it.
  const char* item_status() const { return finish_ == "length" ? "incomplete" : "completed"; }

  const char* finish_status() const {
    if (finish_ == "length") return "incomplete";
    if (finish_ == "stop" || finish_ == "tool_calls") return "completed";
    return "failed";
  }

  json incomplete_details() const {
    return finish_ == "length" ? json{{"reason", "max_output_tokens"}} : json(nullptr);
  }

  // cached: prompt tokens found cached (-1, not reported, reads as 0).
  static json usage(int64_t prompt, int64_t completion, int64_t cached) {
    return {{"input_tokens", prompt},
            {"input_tokens_details", {{"cached_tokens", std::max<int64_t>(cached, 0)}}},
            {"output_tokens", completion},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", prompt + completion}};
  }

  json response_object(const char* status, json incomplete, json usage_value) const {
    json r = {{"id", resp_id_},
              {"object", "response"},
              {"created_at", ctx_.created},
              {"status", status},
              {"error", nullptr},
              {"incomplete_details", incomplete},
              {"model", ctx_.model},
              {"output", json::array()}};
    for (const Item& it : items_) r["output"].push_back(item_json(it, item_status()));
    if (std::string(status) == "in_progress") r["output"] = json::array();
    const json echo(echo_);  // a named copy: a temporary in the range would die before the loop
    for (auto& [k, v] : echo.items()) r[k] = v;
    r["usage"] = usage_value;
    if (std::string(status) == "failed" && finish_ == "abort")
      r["error"] = {{"code", "server_error"}, {"message", "the request was cut off by the server"}};
    return r;
  }

  DialectContext ctx_;
  ojson echo_;  // the request's settings, as the response object repeats them
  std::string resp_id_;
  std::vector<Item> items_;
  int32_t open_ = -1;
  std::map<int32_t, int32_t> call_items_;  // chat tool-call index -> output index
  std::string finish_;
  int64_t seq_ = 0;
};

}  // namespace

Result<DialectRequest> translate_responses_request(const ojson& body, const DialectContext& ctx) {
  if (!body.is_object()) return make_error("the request body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (value.is_null() || implemented(key)) continue;
    if (key == "previous_response_id" || key == "conversation")
      return make_field_error(key, "'" + key + "' is not supported: pagoda keeps no responses or conversations " +
                                       "(\"store\": false); send the whole conversation in 'input'");
    return make_field_error(key, "unsupported field '" + key + "': this server does not implement it");
  }
  PAGODA_RETURN_IF_ERROR(check_neutral(body));
  ojson chat = ojson::object();
  if (field_set(body, "model")) chat["model"] = body["model"];
  ojson messages = ojson::array();
  if (field_set(body, "instructions")) {
    if (!body["instructions"].is_string()) return make_field_error("instructions", "'instructions' must be a string");
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  if (!field_set(body, "input")) return make_field_error("input", "'input' is required");
  PAGODA_RETURN_IF_ERROR(translate_input(body["input"], messages));
  chat["messages"] = messages;
  ojson echo = {
      {"instructions", field_set(body, "instructions") ? body["instructions"] : ojson(nullptr)},
      {"max_output_tokens", field_set(body, "max_output_tokens") ? body["max_output_tokens"] : ojson(nullptr)},
      {"metadata", field_set(body, "metadata") ? body["metadata"] : ojson::object()},
      {"parallel_tool_calls", field_set(body, "parallel_tool_calls") ? body["parallel_tool_calls"] : ojson(true)},
      {"previous_response_id", nullptr},
      {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
      {"store", false},
      {"temperature", field_set(body, "temperature") ? body["temperature"] : ojson(1.0)},
      {"text", field_set(body, "text") && field_set(body["text"], "format") ? body["text"]
                                                                            : ojson{{"format", {{"type", "text"}}}}},
      {"tool_choice", field_set(body, "tool_choice") ? body["tool_choice"] : ojson("auto")},
      {"tools", field_set(body, "tools") ? body["tools"] : ojson::array()},
      {"top_p", field_set(body, "top_p") ? body["top_p"] : ojson(1.0)},
      {"truncation", "disabled"},
      {"user", field_set(body, "user") ? body["user"] : ojson(nullptr)}};
  if (field_set(body, "tools")) {
    auto tools = translate_responses_tools(body["tools"]);
    if (!tools.ok()) return tools.error();
    if (!tools->empty()) chat["tools"] = *tools;
  }
  if (field_set(body, "tool_choice")) {
    auto choice = translate_responses_tool_choice(body["tool_choice"]);
    if (!choice.ok()) return choice.error();
    if (chat.contains("tools")) chat["tool_choice"] = *choice;
    else if (*choice != "auto" && *choice != "none")
      return make_field_error("tool_choice", "'tool_choice' needs 'tools'");
  }
  if (field_set(body, "parallel_tool_calls")) chat["parallel_tool_calls"] = body["parallel_tool_calls"];
  if (field_set(body, "text")) PAGODA_RETURN_IF_ERROR(translate_text(body["text"], chat));
  if (field_set(body, "max_output_tokens")) chat["max_completion_tokens"] = body["max_output_tokens"];
  for (const char* key : {"temperature", "top_p", "stream", "user"})
    if (field_set(body, key)) chat[key] = body[key];
  DialectRequest out;
  out.chat_body = std::move(chat);
  out.dialect = std::make_unique<ResponsesDialect>(ctx, std::move(echo));
  return out;
}

}  // namespace pagoda
