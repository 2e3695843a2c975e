// Reads the bodies of POST /v1/completions and /v1/chat/completions into a GenerationRequest plus the protocol's
// own settings (streaming, usage chunks, the model name asked for). A field of a known name with a wrong type or
// value is an error naming it (Error::param). So is any field pagoda does not implement (tools, functions, ...): a client that relies on a field must never get an answer that silently ignored it. A field sent
// as null counts as absent, as OpenAI's API treats it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/chat_prompt.h"
#include "engine/request.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda {

enum class ApiEndpoint { kCompletions, kChatCompletions };

struct OpenAiRequest {
  ApiEndpoint endpoint = ApiEndpoint::kCompletions;
  std::string model;           // as sent; empty when the body has none (the served model is meant)
  bool stream = false;         // Server-Sent Events
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM's): every chunk has the usage so far
  bool tokens_as_ids = false;  // vLLM's return_tokens_as_token_ids: logprob tokens read "token_id:N"
  std::string anchor;          // "anchor": the digest of an active verified anchor (resolved by the server)
  GenerationRequest gen;       // prompt tokenized, max_tokens resolved against the context
  // Completions only: every prompt of the request, in order (gen.prompt is the first). Each becomes its own engine
  // request with gen's settings; its choices are numbered prompt_index * n + choice, as in OpenAI's API.
  std::vector<std::vector<int32_t>> prompts;
  // Chat with tools: the replies are parsed for tool calls in this format (kNone: no parsing).
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  bool parallel_tool_calls = true;
  std::vector<ToolSpec> tools;  // the request's tools, as read
};

// At most this many choices (prompts x n) in one request.
inline constexpr int32_t kMaxChoicesPerRequest = 128;

// What the parser checks requests against.
struct ApiLimits {
  int64_t max_model_len = 0;  // prompt + max_tokens must fit
  const ChatPrompt* chat_template = nullptr;  // how chat messages become the prompt; nullptr: built-in chatml
  // With an anchor: its token count. The prompts then lose their BOS (the anchor's tokens come first and carry
  // it) and the context check counts anchor + prompt + max_tokens.
  int64_t anchor_tokens = -1;
  // The KV pool's size in tokens (blocks x block size; 0: not checked): a prompt, and a prompt plus an explicit
  // max_tokens, that the whole pool could not hold are refused at admission, naming the pool, instead of failing or
  // stopping short later.
  int64_t kv_pool_tokens = 0;
  int64_t kv_pool_blocks = 0, kv_block_size = 0;  // for the message
  // Set when the request's tenant may hold fewer blocks than the pool (max_kv_blocks): the pool figures above are
  // its limit, and the messages name it.
  std::string kv_limit_tenant = {};
};

// The "anchor" field of a body, if any (the server resolves it before parsing the rest with its token count).
Result<std::string> peek_anchor_field(const nlohmann::json& body);

// prompt: a string, token ids, or a list of either (several prompts); max_tokens defaults to 16 as in OpenAI's API.
// ordered_body (both endpoints): the same body parsed keeping its key order, which a template's tojson shows and
// a json_schema's properties follow; nullptr: the keys' sorted order. Structured-output fields: see
// api/output_constraint.h.
Result<OpenAiRequest> parse_completion_request(const nlohmann::json& body, const Tokenizer& tokenizer,
                                               const ApiLimits& limits,
                                               const nlohmann::ordered_json* ordered_body = nullptr);
// messages: [{role, content, ...}] with content a string or a list of {"type": "text", "text": ...} parts, rendered
// by limits.chat_template (name, tool_calls, tool_call_id and reasoning_content reach a Jinja template as given;
// chat_template_kwargs adds template variables);
// max_completion_tokens (or max_tokens) defaults to the rest of the context, as in vLLM. logprobs is a boolean
// and top_logprobs (0..20) the number of alternatives.
Result<OpenAiRequest> parse_chat_request(const nlohmann::json& body, const Tokenizer& tokenizer,
                                         const ApiLimits& limits, const nlohmann::ordered_json* ordered_body = nullptr);

}  // namespace pagoda
