// Anthropic's Messages API (POST /v1/messages, POST /v1/messages/count_tokens) over the chat path
// (api/chat_dialect.h).
//
// Request: model, max_tokens (required), system (a string or text blocks), messages (user / assistant, content a
// string or blocks: text, tool_use, tool_result), tools (custom tools: name, description, input_schema),
// tool_choice (auto / any / tool / none, disable_parallel_tool_use), stop_sequences, temperature, top_p, top_k,
// stream, metadata.user_id, output_config.format (a JSON Schema the reply follows: structured outputs).
// cache_control (request-wide, on blocks and on tools) is accepted: pagoda's prefix cache keeps every prompt's
// blocks without being asked. Everything else (images, documents, thinking, server tools, MCP servers,
// ...) is a 400 naming it, in Anthropic's error shape {"type": "error", "error": {"type", "message"}}.
// Response: content blocks (text, tool_use with the call's arguments as `input`), stop_reason (end_turn,
// max_tokens, stop_sequence with stop_sequence set, tool_use), usage. Streamed as message_start, then per block
// content_block_start, content_block_delta (text_delta / input_json_delta)..., content_block_stop, then
// message_delta (stop_reason, usage) and message_stop; an error mid-stream is an `error` event.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/chat_dialect.h"
#include "util/result.h"

namespace pagoda {

// The body as a chat completions body and the dialect that answers it. count_tokens: the count_tokens endpoint's
// body (no max_tokens, no sampling fields). Errors (Error::param) name the Messages field.
Result<DialectRequest> translate_anthropic_request(const nlohmann::ordered_json& body, const DialectContext& ctx,
                                                   bool count_tokens = false);

// Anthropic's error shape: {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}.
nlohmann::json anthropic_error_body(int status, const std::string& message);

}  // namespace pagoda
