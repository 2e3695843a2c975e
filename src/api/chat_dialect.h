// ChatDialect: another HTTP API served over the chat path. Its request is rewritten as a chat completions body
// (parse_chat_request does the rest: template, tools, grammar, limits), and the chat response, or the stream of
// its chunks (api/openai_response.h), is rewritten in the API's own shapes. One reading of a reply for every API:
// tool calls, stop strings and usage come from the same builder whichever API asked.
//   POST /v1/responses  OpenAI's Responses API (api/responses_api.h)
//   POST /v1/messages   Anthropic's Messages API (api/anthropic_messages.h)
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "util/result.h"

namespace pagoda {

class ChatDialect {
 public:
  virtual ~ChatDialect() = default;

  // The API's name for a parameter the chat parser named ("max_completion_tokens" -> "max_output_tokens"), so
  // that every error names the field the client sent.
  virtual std::string param_name(const std::string& chat_param) const = 0;

  // Streaming, as Server-Sent Events text: the events that open the stream, those one chat chunk brings, and the
  // closing ones (after the last chunk); an error that ends the stream early. prompt_tokens: the prompt's length;
  // cached_tokens: those of them the engine found cached (-1: not reported).
  virtual std::string stream_open(int64_t prompt_tokens) = 0;
  virtual std::string stream_chunk(const nlohmann::json& chunk) = 0;
  virtual std::string stream_close(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) = 0;
  virtual std::string stream_error(const std::string& message) = 0;

  // Non-streaming: the whole chat response (one choice) in the API's shape.
  virtual nlohmann::json response(const nlohmann::json& chat_response) = 0;
};

// A parser's error about a chat field, in the words of the API the client spoke: every quoted 'from' in the
// message becomes 'to' (the caller renames Error::param itself). Also LocalAI's PredictOptions (localai/).
std::string rename_in_message(std::string message, const std::string& from, const std::string& to);

// usage.prompt_tokens_details.cached_tokens of a chat response, or -1 when it has none.
int64_t cached_tokens_of(const nlohmann::json& chat_response);

// What a dialect's answers carry from the server.
struct DialectContext {
  std::string id;     // the server's request id; the API's own ids derive from it
  std::string model;  // the served model's name
  int64_t created = 0;
};

// A request of another API, as the chat endpoint reads it, and the dialect that answers it.
struct DialectRequest {
  nlohmann::ordered_json chat_body;
  std::unique_ptr<ChatDialect> dialect;
};

// One SSE event with a name: "event: NAME\ndata: JSON\n\n".
std::string sse_event(const std::string& name, const nlohmann::json& data);

}  // namespace pagoda
