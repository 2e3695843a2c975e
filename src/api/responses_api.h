// OpenAI's Responses API (POST /v1/responses), stateless, over the chat path (api/chat_dialect.h).
//
// Request: input (a string, or a list of items: messages whose content is a string or input_text / output_text
// parts, function_call and function_call_output items), instructions (a system turn first), tools (function
// tools), tool_choice, parallel_tool_calls, text.format (text / json_object / json_schema), max_output_tokens,
// temperature, top_p, stream, metadata (echoed), user, store false. Every other field, or a value pagoda does not
// implement (store true, previous_response_id, hosted tools, image inputs, reasoning items, ...), is a 400 that
// names it: pagoda keeps no responses, so nothing can refer to an earlier one.
// Response: output items ("message" with output_text, "function_call"), status ("completed", or "incomplete"
// with incomplete_details.reason "max_output_tokens"), usage (input / output / total tokens). Streamed as the typed
// events in the documented order: response.created, response.in_progress, then per output item
// response.output_item.added, (message) response.content_part.added, response.output_text.delta...,
// response.output_text.done, response.content_part.done, (call) response.function_call_arguments.delta...,
// response.function_call_arguments.done, then response.output_item.done; last response.completed (or
// response.incomplete / response.failed). Each event carries a sequence_number from 0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/chat_dialect.h"
#include "util/result.h"

namespace pagoda {

// The body as a chat completions body and the dialect that answers it. Errors (Error::param) name the Responses
// field.
Result<DialectRequest> translate_responses_request(const nlohmann::ordered_json& body, const DialectContext& ctx);

}  // namespace pagoda
