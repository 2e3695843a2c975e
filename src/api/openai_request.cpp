#include "api/openai_request.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "api/generic_tool_format.h"
#include "api/output_constraint.h"
#include "api/request_json.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

// The fields each endpoint implements. Anything else, unless null, is refused by name.
constexpr std::array<std::string_view, 21> kSharedFields = {
    "model",         "max_tokens",        "temperature",        "top_p",      "top_k",
    "min_p",         "seed",              "stop",               "n",          "logprobs",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "ignore_eos", "cache_salt",
    "logit_bias",    "stream",            "stream_options",     "user",       "return_tokens_as_token_ids",
    "anchor"};
constexpr std::array<std::string_view, 4> kCompletionFields = {"prompt", "echo", "suffix", "best_of"};
constexpr std::array<std::string_view, 7> kChatFields = {"messages",  "max_completion_tokens", "top_logprobs",
                                                         "chat_template_kwargs", "tools", "tool_choice",
                                                         "parallel_tool_calls"};
// Message fields a Jinja chat template may read (the built-in families take only role and content).
constexpr std::array<std::string_view, 6> kMessageFields = {"role",       "content",      "name",
                                                            "tool_calls", "tool_call_id", "reasoning_content"};
// Fields of OpenAI's API that change what a client gets back; named in the error so that nobody mistakes the
// refusal for a typo.
constexpr std::array<std::string_view, 2> kNotYetImplemented = {"functions", "function_call"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

Status check_known_fields(const json& body, ApiEndpoint endpoint) {
  for (const auto& [key, value] : body.items()) {
    if (value.is_null() || listed(kSharedFields, key) || listed(kConstraintFields, key)) continue;
    if (endpoint == ApiEndpoint::kCompletions ? listed(kCompletionFields, key) : listed(kChatFields, key)) continue;
    if (listed(kNotYetImplemented, key))
      return make_field_error(key, "'" + key + "' (OpenAI's deprecated function calling) is not supported; use " +
                                       "'tools' and 'tool_choice'");
    return make_field_error(key, "unsupported field '" + key + "': this server does not implement it");
  }
  return Status::success();
}

// The fields both endpoints share besides the prompt: model, stream, stream_options, user, and the generation
// fields of request_json.
Status read_common(const json& body, OpenAiRequest& out) {
  if (field_set(body, "model")) {
    if (!body["model"].is_string()) return make_field_error("model", "'model' must be a string");
    out.model = body["model"].get<std::string>();
  }
  if (field_set(body, "stream")) {
    if (!body["stream"].is_boolean()) return make_field_error("stream", "'stream' must be true or false");
    out.stream = body["stream"].get<bool>();
  }
  if (field_set(body, "stream_options")) {
    const json& so = body["stream_options"];
    if (!so.is_object()) return make_field_error("stream_options", "'stream_options' must be an object");
    if (!out.stream) return make_field_error("stream_options", "'stream_options' is only allowed with 'stream': true");
    for (const auto& [key, value] : so.items()) {
      if (value.is_null()) continue;
      if (!value.is_boolean())
        return make_field_error("stream_options", "'stream_options." + key + "' must be true or false");
      if (key == "include_usage") {
        out.include_usage = value.get<bool>();
      } else if (key == "continuous_usage_stats") {  // vLLM's: every chunk carries the usage so far
        out.continuous_usage = value.get<bool>();
      } else if (key == "include_obfuscation") {
        // OpenAI pads chunks against side channels; pagoda sends no padding, which only `false` asks for.
        if (value.get<bool>())
          return make_field_error("stream_options", "'stream_options.include_obfuscation' true is not supported "
                                                    "(pagoda sends no obfuscation padding)");
      } else {
        return make_field_error("stream_options", "'stream_options." + key + "' is not supported (include_usage, " +
                                                      "continuous_usage_stats, include_obfuscation: false)");
      }
    }
  }
  if (field_set(body, "return_tokens_as_token_ids")) {
    if (!body["return_tokens_as_token_ids"].is_boolean())
      return make_field_error("return_tokens_as_token_ids", "'return_tokens_as_token_ids' must be true or false");
    out.tokens_as_ids = body["return_tokens_as_token_ids"].get<bool>();
  }
  if (field_set(body, "user") && !body["user"].is_string()) return make_field_error("user", "'user' must be a string");
  auto anchor = peek_anchor_field(body);
  if (!anchor.ok()) return anchor.error();
  out.anchor = *anchor;
  if (field_set(body, "priority"))  // a scheduling field of pagoda's own batch format, not offered over HTTP
    return make_field_error("priority", "'priority' is not accepted over HTTP");
  return read_generation_fields(body, out.gen);
}

// response_format, json_schema, grammar, guided_choice: compiled into out.gen.grammar.
Status read_constraint(const json& body, const nlohmann::ordered_json* ordered_body, const Tokenizer& tokenizer,
                       OpenAiRequest& out) {
  bool any = false;
  for (std::string_view field : kConstraintFields) any = any || field_set(body, std::string(field).c_str());
  if (!any) return Status::success();
  auto constraint = read_output_constraint(
      ordered_body && ordered_body->is_object() ? *ordered_body : nlohmann::ordered_json::parse(body.dump()), tokenizer);
  if (!constraint.ok()) return constraint.error();
  out.gen.grammar = *constraint;
  return Status::success();
}

Status check_logit_bias_ids(const OpenAiRequest& out, const Tokenizer& tokenizer) {
  for (const auto& [id, bias] : out.gen.sampling.logit_bias)
    if (id >= tokenizer.n_vocab())
      return make_field_error("logit_bias", "'logit_bias' names token " + std::to_string(id) +
                                                ", outside the vocabulary of " + std::to_string(tokenizer.n_vocab()));
  return Status::success();
}

// max_tokens against the context: an explicit value must fit; none means `default_max` (or the rest of the
// context when default_max is 0).
Status resolve_max_tokens(const json& body, const char* prompt_param, int64_t default_max, const ApiLimits& limits,
                          OpenAiRequest& out) {
  // With an anchor, its tokens are part of the sequence's prompt.
  const int64_t prompt_len = static_cast<int64_t>(out.gen.prompt.size()) + std::max<int64_t>(limits.anchor_tokens, 0);
  if (prompt_len >= limits.max_model_len)
    return make_field_error(prompt_param, "This model's maximum context length is " +
                                              std::to_string(limits.max_model_len) + " tokens, but the prompt has " +
                                              std::to_string(prompt_len) +
                                              " tokens, which leaves no room for a completion");
  const std::string pool = limits.kv_pool_tokens > 0
                               ? std::to_string(limits.kv_pool_tokens) + " tokens (" +
                                     std::to_string(limits.kv_pool_blocks) + " blocks of " +
                                     std::to_string(limits.kv_block_size) + ")"
                               : std::string();
  const std::string holder = limits.kv_limit_tenant.empty()
                                 ? std::string("the server's KV pool holds ")
                                 : "tenant '" + limits.kv_limit_tenant + "' may hold (max_kv_blocks) ";
  if (limits.kv_pool_tokens > 0 && prompt_len + 1 > limits.kv_pool_tokens)
    return make_field_error(prompt_param, "the prompt has " + std::to_string(prompt_len) + " tokens; " + holder +
                                              pool + ", so it can never run" +
                                              (limits.kv_limit_tenant.empty()
                                                   ? " (the server needs a larger --num-blocks or --kv-cache-mem)"
                                                   : ""));
  const bool explicit_max = field_set(body, "max_tokens") || field_set(body, "max_completion_tokens");
  if (!explicit_max) out.gen.max_tokens = default_max > 0 ? default_max : limits.max_model_len - prompt_len;
  if (explicit_max && limits.kv_pool_tokens > 0 && prompt_len + out.gen.max_tokens > limits.kv_pool_tokens) {
    const char* param = field_set(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    return make_field_error(param, "the prompt (" + std::to_string(prompt_len) + " tokens) plus " + param + " (" +
                                       std::to_string(out.gen.max_tokens) + ") needs " +
                                       std::to_string(prompt_len + out.gen.max_tokens) +
                                       " tokens of KV cache; " + holder + pool + ". Reduce '" +
                                       param + "' or the prompt.");
  }
  if (prompt_len + out.gen.max_tokens > limits.max_model_len) {
    const char* param = field_set(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    return make_field_error(param, "This model's maximum context length is " + std::to_string(limits.max_model_len) +
                                       " tokens. However, you requested " +
                                       std::to_string(prompt_len + out.gen.max_tokens) + " tokens (" +
                                       std::to_string(prompt_len) + " in the prompt, " +
                                       std::to_string(out.gen.max_tokens) + " for the completion). Reduce '" +
                                       param + "' or the prompt.");
  }
  return Status::success();
}

Result<std::string> message_content(const json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (!field_set(m, "content")) return std::string();
  const json& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) return make_field_error("messages", "'" + where + "' must be a string or a list of parts");
  std::string text;
  for (const json& part : c) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string())
      return make_field_error("messages", "'" + where + "' may only hold {\"type\": \"text\", \"text\": ...} parts");
    text += part["text"].get<std::string>();
  }
  return text;
}

// With an anchor the prompt continues the anchor's tokens, which begin with the model's BOS: its own BOS goes.
void strip_bos_after_anchor(std::vector<int32_t>& ids, const Tokenizer& tokenizer, const ApiLimits& limits) {
  if (limits.anchor_tokens < 0 || ids.empty()) return;
  if (tokenizer.add_bos() && tokenizer.bos() && ids.front() == *tokenizer.bos()) ids.erase(ids.begin());
}

// One prompt of a completion request: text or token ids.
Result<std::vector<int32_t>> one_prompt(const json& prompt, const Tokenizer& tokenizer, const std::string& param) {
  std::vector<int32_t> ids;
  if (prompt.is_string()) {
    ids = tokenizer.encode(prompt.get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
  } else if (prompt.is_array()) {
    auto parsed = token_ids_from_json(prompt, tokenizer.n_vocab(), param);
    if (!parsed.ok()) return parsed.error();
    ids = std::move(*parsed);
  } else {
    return make_field_error("prompt", "'" + param + "' must be a string or a list of token ids");
  }
  if (ids.empty()) return make_field_error("prompt", "'" + param + "' is empty");
  return ids;
}

}  // namespace

Result<std::string> peek_anchor_field(const json& body) {
  if (!body.is_object() || !field_set(body, "anchor")) return std::string();
  if (!body["anchor"].is_string() || body["anchor"].get<std::string>().empty())
    return make_field_error("anchor", "'anchor' must be the digest of an active anchor (a string)");
  return body["anchor"].get<std::string>();
}

Result<OpenAiRequest> parse_completion_request(const json& body, const Tokenizer& tokenizer,
                                               const ApiLimits& limits, const nlohmann::ordered_json* ordered_body) {
  if (!body.is_object()) return make_error("the request body must be a JSON object");
  PAGODA_RETURN_IF_ERROR(check_known_fields(body, ApiEndpoint::kCompletions));
  OpenAiRequest out;
  out.endpoint = ApiEndpoint::kCompletions;
  if (!field_set(body, "prompt")) return make_field_error("prompt", "'prompt' is required");
  const json& prompt = body["prompt"];
  // A list of strings or of token-id lists holds several prompts; a list of integers is one prompt.
  if (prompt.is_array() && !prompt.empty() && (prompt[0].is_string() || prompt[0].is_array())) {
    if (prompt.size() > static_cast<size_t>(kMaxChoicesPerRequest))
      return make_field_error("prompt", "'prompt' holds " + std::to_string(prompt.size()) +
                                            " prompts; at most " + std::to_string(kMaxChoicesPerRequest) + " per request");
    for (size_t i = 0; i < prompt.size(); ++i) {
      auto ids = one_prompt(prompt[i], tokenizer, "prompt[" + std::to_string(i) + "]");
      if (!ids.ok()) return ids.error();
      strip_bos_after_anchor(*ids, tokenizer, limits);
      if (ids->empty()) return make_field_error("prompt", "'prompt[" + std::to_string(i) + "]' is empty after the anchor");
      out.prompts.push_back(std::move(*ids));
    }
  } else if (prompt.is_array() && prompt.empty()) {
    return make_field_error("prompt", "'prompt' is an empty list");
  } else {
    auto ids = one_prompt(prompt, tokenizer, "prompt");
    if (!ids.ok()) return ids.error();
    strip_bos_after_anchor(*ids, tokenizer, limits);
    if (ids->empty()) return make_field_error("prompt", "the prompt is empty after the anchor");
    out.prompts.push_back(std::move(*ids));
  }
  if (field_set(body, "echo") && body["echo"] != false) return make_field_error("echo", "'echo' is not supported");
  if (field_set(body, "suffix")) return make_field_error("suffix", "'suffix' is not supported");
  if (field_set(body, "best_of") && body["best_of"] != 1 && body["best_of"] != body.value("n", json(1)))
    return make_field_error("best_of", "'best_of' other than n is not supported");
  PAGODA_RETURN_IF_ERROR(read_common(body, out));
  PAGODA_RETURN_IF_ERROR(read_constraint(body, ordered_body, tokenizer, out));
  PAGODA_RETURN_IF_ERROR(check_logit_bias_ids(out, tokenizer));
  const int64_t choices = static_cast<int64_t>(out.prompts.size()) * out.gen.n;
  if (choices > kMaxChoicesPerRequest)
    return make_field_error("n", std::to_string(out.prompts.size()) + " prompts x n = " + std::to_string(out.gen.n) +
                                     " make " + std::to_string(choices) + " choices; at most " +
                                     std::to_string(kMaxChoicesPerRequest) + " per request");
  // max_tokens must fit beside the longest prompt (and its default is checked the same way).
  const auto longest = std::max_element(out.prompts.begin(), out.prompts.end(),
                                        [](const auto& a, const auto& b) { return a.size() < b.size(); });
  out.gen.prompt = *longest;
  PAGODA_RETURN_IF_ERROR(resolve_max_tokens(body, "prompt", 16, limits, out));
  out.gen.prompt = out.prompts.front();
  return out;
}

Result<OpenAiRequest> parse_chat_request(const json& body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                         const nlohmann::ordered_json* ordered_body) {
  if (!body.is_object()) return make_error("the request body must be a JSON object");
  PAGODA_RETURN_IF_ERROR(check_known_fields(body, ApiEndpoint::kChatCompletions));
  OpenAiRequest out;
  out.endpoint = ApiEndpoint::kChatCompletions;
  if (!body.contains("messages") || !body["messages"].is_array())
    return make_field_error("messages", "'messages' is required and must be a list of messages");
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    const json& m = body["messages"][i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return make_field_error("messages", "messages[" + std::to_string(i) + "] must be an object with a 'role'");
    for (const auto& [key, value] : m.items())
      if (!listed(kMessageFields, key) && !value.is_null())
        return make_field_error("messages", "'messages[" + std::to_string(i) + "]." + key +
                                                "' is not supported (messages carry role, content, name, tool_calls, " +
                                                "tool_call_id and reasoning_content)");
    auto content = message_content(m, i);  // checks the content's shape
    if (!content.ok()) return content.error();
  }
  static const ChatPrompt kDefaultPrompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  const ChatPrompt& chat_prompt = limits.chat_template ? *limits.chat_template : kDefaultPrompt;
  ChatInput input;
  using ojson = nlohmann::ordered_json;
  const bool ordered = ordered_body && ordered_body->is_object();
  input.messages = chat_prompt.adapt_openai_messages(ordered ? (*ordered_body)["messages"]
                                                             : ojson::parse(body["messages"].dump()));
  if (field_set(body, "chat_template_kwargs")) {
    input.kwargs = ordered ? (*ordered_body)["chat_template_kwargs"] : ojson::parse(body["chat_template_kwargs"].dump());
    PAGODA_RETURN_IF_ERROR(check_chat_template_kwargs(input.kwargs, "chat_template_kwargs"));
  }
  // Tools: rendered by the template and the reply parsed for calls in the template's format, or, for a template
  // that shows no format, the generic one (api/generic_tool_format.h). "required" or a named function are forced
  // by a grammar, and so is every reply in the generic format.
  std::string generic_instructions;
  bool generic = false, wrap_replies = false;
  if (field_set(body, "tools") || field_set(body, "tool_choice") || field_set(body, "parallel_tool_calls")) {
    const ojson tools_json = ordered && ordered_body->contains("tools") ? (*ordered_body)["tools"]
                             : field_set(body, "tools")                 ? ojson::parse(body["tools"].dump())
                                                                        : ojson::array();
    auto tools = read_tools(tools_json.is_null() ? ojson::array() : tools_json);
    if (!tools.ok()) return tools.error();
    ToolChoice choice;
    if (field_set(body, "tool_choice")) {
      auto c = read_tool_choice(ojson::parse(body["tool_choice"].dump()), *tools);
      if (!c.ok()) return c.error();
      choice = *c;
    }
    if (field_set(body, "parallel_tool_calls")) {
      if (!body["parallel_tool_calls"].is_boolean())
        return make_field_error("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
      out.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
    }
    out.tools = *tools;
    if (!tools->empty()) {
      const ToolCallFormat format =
          chat_prompt.tool_format() == ToolCallFormat::kNone ? ToolCallFormat::kGeneric : chat_prompt.tool_format();
      generic = format == ToolCallFormat::kGeneric;
      if (!generic) input.tools = tools_json;
      if (choice.kind != ToolChoice::Kind::kNone) out.tool_format = format;
      if (generic) generic_instructions = generic_tool_instructions(*tools, choice, out.parallel_tool_calls);
      wrap_replies = generic && choice.kind != ToolChoice::Kind::kNone;
      const bool forced = choice.kind == ToolChoice::Kind::kRequired || choice.kind == ToolChoice::Kind::kNamed;
      if (forced || (generic && choice.kind == ToolChoice::Kind::kAuto)) {
        for (std::string_view field : kConstraintFields)
          if (field_set(body, std::string(field).c_str()))
            return make_field_error(forced ? std::string("tool_choice") : std::string(field), forced ? "'tool_choice' \"required\" or a named function cannot be "
                                                                 "combined with '" + std::string(field) + "'"
                                                               : "'" + std::string(field) + "' cannot be combined with " +
                                                                     "'tools' under the generic tool-call format (the " +
                                                                     "chat template has none of its own); give " +
                                                                     "'tool_choice': \"none\" or leave one out");
        auto gbnf = tool_call_gbnf(format, *tools, choice, out.parallel_tool_calls);
        if (!gbnf.ok()) return gbnf.error();
        auto compiled = grammar::compile_grammar(*gbnf, tokenizer);
        if (!compiled.ok()) return make_field_error("tools", "the tool-call grammar: " + compiled.error().message);
        out.gen.grammar = *compiled;
      }
    } else if (field_set(body, "tool_choice")) {
      return make_field_error("tool_choice", "'tool_choice' is only allowed when 'tools' are given");
    }
  }
  // A template without a tool-call format sees tool calls and results as text (and the generic instructions in
  // its system turn, or, when it refuses a system role, at the start of the first user message).
  Result<std::string> text = std::string();
  if (chat_prompt.tool_format() == ToolCallFormat::kNone && (generic || has_tool_history(input.messages))) {
    const ojson adapted = input.messages;
    input.messages = generic_tool_messages(adapted, generic_instructions, /*system_turn=*/true, wrap_replies);
    text = chat_prompt.render(input);
    if (!text.ok() && !generic_instructions.empty()) {
      input.messages = generic_tool_messages(adapted, generic_instructions, /*system_turn=*/false, wrap_replies);
      if (auto retry = chat_prompt.render(input); retry.ok()) text = std::move(retry);
    }
  } else {
    text = chat_prompt.render(input);
  }
  if (!text.ok()) return text.error();
  out.gen.prompt = tokenize_chat_prompt(*text, tokenizer);
  strip_bos_after_anchor(out.gen.prompt, tokenizer, limits);
  if (out.gen.prompt.empty()) return make_field_error("messages", "the conversation renders to no tokens");
  out.prompts.push_back(out.gen.prompt);

  // Chat's logprobs is a switch and top_logprobs the count; request_json reads an integer 'logprobs'.
  json generation = body;
  generation.erase("logprobs");
  generation.erase("top_logprobs");
  if (field_set(body, "max_completion_tokens")) generation["max_tokens"] = body["max_completion_tokens"];
  PAGODA_RETURN_IF_ERROR(read_common(generation, out));
  PAGODA_RETURN_IF_ERROR(read_constraint(body, ordered_body, tokenizer, out));
  PAGODA_RETURN_IF_ERROR(check_logit_bias_ids(out, tokenizer));
  if (field_set(body, "max_completion_tokens") && out.gen.max_tokens < 1)
    return make_field_error("max_completion_tokens", "'max_completion_tokens' must be at least 1");
  bool logprobs = false;
  if (field_set(body, "logprobs")) {
    if (!body["logprobs"].is_boolean()) return make_field_error("logprobs", "'logprobs' must be true or false");
    logprobs = body["logprobs"].get<bool>();
  }
  int32_t top = 0;
  if (field_set(body, "top_logprobs")) {
    const json& t = body["top_logprobs"];
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > 20)
      return make_field_error("top_logprobs", "'top_logprobs' must be an integer between 0 and 20");
    if (!logprobs) return make_field_error("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    top = static_cast<int32_t>(t.get<int64_t>());
  }
  out.gen.logprobs = logprobs ? top : -1;
  PAGODA_RETURN_IF_ERROR(resolve_max_tokens(body, "messages", 0, limits, out));
  return out;
}

}  // namespace pagoda
