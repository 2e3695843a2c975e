// Turns a request's stream events into OpenAI response objects: the chunks of a streamed response
// ("text_completion" / "chat.completion.chunk") or, accumulated, the one final object with its usage.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/openai_request.h"
#include "api/tool_call_stream.h"
#include "api/tool_calls.h"
#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

// "stop" / "length"; a request cut off by the server (client gone, shutdown) ends with "abort", as in vLLM.
const char* openai_finish_reason(FinishReason reason);

class ResponseBuilder {
 public:
  ResponseBuilder(ApiEndpoint endpoint, std::string id, std::string model, int64_t created, const Tokenizer& tokenizer,
                  int32_t num_choices, int32_t logprobs);

  // Streaming: the chunks this event produces (none for a token whose text is held back and that carries no
  // logprobs). A kError event produces no chunk: the caller reports the error.
  std::vector<nlohmann::json> chunks_for(const StreamEvent& event);
  // The last chunk of a stream with include_usage: no choices, the usage.
  nlohmann::json usage_chunk(int64_t prompt_tokens) const;

  // Non-streaming: accumulate every event, then build the response.
  void add(const StreamEvent& event);
  nlohmann::json final_response(int64_t prompt_tokens) const;

  int64_t completion_tokens() const { return completion_tokens_; }
  // Prompt tokens whose K/V came from the cache (prefix cache, pinned anchor), -1 when the engine reported none.
  int64_t cached_prompt_tokens() const { return cached_prompt_tokens_; }
  bool include_usage_null = false;  // streamed chunks carry "usage": null (stream_options.include_usage)
  // stream_options.continuous_usage_stats: every streamed chunk carries the usage so far (this prompt count).
  int64_t continuous_usage_prompt_tokens = -1;
  bool tokens_as_ids = false;       // logprob tokens as "token_id:N" instead of their text
  int64_t anchor_tokens = -1;       // >= 0: usage gains "anchor_tokens" (they are counted in prompt_tokens too)
  // Chat with tools: replies are parsed for tool calls in this format; finish_reason is "tool_calls". Streaming
  // holds back text that may be part of a call and sends each call as delta.tool_calls as it forms: its id and
  // name, then its arguments fragment by fragment (tool_call_stream.h).
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  bool parallel_tool_calls = true;
  std::vector<ToolSpec> tools;  // the request's tools (qwen3-coder's XML values are typed by their schemas)

 private:
  struct Choice {
    std::string text;
    nlohmann::json logprobs;  // accumulated, in the endpoint's format
    const char* finish_reason = nullptr;
    std::optional<FinishReason> finish_event;  // the engine's reason, once the choice finished
    std::string stop_string;                   // the stop string that ended it, if one did
    bool role_sent = false;  // chat streaming: the first delta carries the role
    int64_t text_offset = 0;
    std::string held;          // tool-call streaming: the reply's text so far
    size_t released = 0;       // leading bytes of `held` already sent as content
    bool decided = false;      // releasable_content's memory
    std::optional<ToolCallStream> calls;  // tool-call streaming: the calls sent so far
  };
  // The tool calls of a finished reply and its content (the calls limited to one unless parallel). A call cut
  // off before its object closed is neither a call nor content; *cut_off says whether there was one.
  ParsedReply parse_reply(std::string_view text, bool* cut_off) const;
  // "tool_calls" when the reply has calls, "length" when max_tokens cut a call off, else the engine's reason.
  const char* tool_finish_reason(FinishReason engine_reason, bool has_calls, bool cut_off) const;
  // A finished reply's message.tool_calls: the calls its stream sends (tool_call_stream.h), joined.
  nlohmann::json tool_calls_json(std::string_view text, const ParsedReply& reply, int32_t choice) const;
  nlohmann::json tool_call_deltas_json(const std::vector<ToolCallDelta>& deltas, int32_t choice) const;
  nlohmann::json chunk_base() const;
  // A token's text as the tool-call parser reads it: ev.text, plus the marker a marker control token stands for.
  std::string reply_text(const StreamEvent& event) const;
  std::string token_text(int32_t id) const;
  nlohmann::json logprobs_for(const StreamEvent& event, const Choice& choice) const;  // this token's entry
  // Warm start (only when the engine tried it): usage gains "pagoda": {"warm_start", "warm_start_similarity"}.
  void note_warm_start(const StreamEvent& event);
  void add_pagoda_usage(nlohmann::json& usage) const;
  // usage.prompt_tokens_details.cached_tokens: the prompt tokens the engine found cached, summed over the
  // request's prompts (-1 until a first token reports it).
  void note_cached_tokens(const StreamEvent& event);
  int64_t cached_prompt_tokens_ = -1;
  int64_t warm_start_tried_ = 0;
  int64_t warm_start_hits_ = 0;
  float warm_start_similarity_ = -2;  // the highest seen
  // Adds an entry to a logprobs object in the endpoint's format (a null object starts empty).
  void append_logprobs(nlohmann::json& logprobs, const nlohmann::json& entry) const;

  ApiEndpoint endpoint_;
  std::string id_, model_;
  int64_t created_;
  const Tokenizer& tokenizer_;
  int32_t logprobs_;
  std::vector<Choice> choices_;
  int64_t completion_tokens_ = 0;
};

// usage: {"prompt_tokens", "completion_tokens", "total_tokens"}
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// Serialises for the wire; token text can hold partial UTF-8, which becomes U+FFFD instead of an exception.
std::string to_wire(const nlohmann::json& value);

}  // namespace pagoda
