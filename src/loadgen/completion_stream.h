// Follows one streamed OpenAI /v1/completions response: SSE bytes in, token arrival times and the token count out.
//
// A token chunk is an event whose "choices" array is non-empty and whose first choice either carries non-empty
// "text" or has no finish_reason yet. So a chunk with empty text still counts while generation goes on (a
// special token, or bytes a detokenizer holds back until a UTF-8 character is complete), but a closing chunk
// that only carries finish_reason (llama-server sends one) does not; usage-only chunks ("choices": []) do not.
// "usage" (from stream_options.include_usage) gives the authoritative output token count when present.
// The stream is complete at "data: [DONE]"; an event that is not JSON, or that carries an "error" object (how
// servers report failures after the 200 status is sent), makes the request fail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/request_record.h"
#include "loadgen/sse_parser.h"
#include "util/result.h"

namespace pagoda::loadgen {

class CompletionStream {
 public:
  // Consumes response-body bytes that arrived `t_s` seconds after the request was sent. An Error means the stream
  // is unusable; stop reading then. Events after [DONE] are ignored.
  Status feed(std::string_view bytes, double t_s);

  bool done() const { return done_; }  // "data: [DONE]" seen

  // Fills the timing fields of `r` for a response that ended `e2e_s` seconds after it was sent, or returns why the
  // stream does not make a successful request (no [DONE], no token).
  Status finish(double e2e_s, RequestRecord& r) const;

 private:
  Status on_event(const std::string& data, double t_s);

  SseParser parser_;
  std::vector<std::string> events_;  // scratch for parser_ output
  std::vector<double> token_times_s_;
  std::optional<int64_t> usage_tokens_;
  std::optional<int64_t> usage_prompt_tokens_;
  std::optional<int64_t> usage_cached_tokens_;
  bool done_ = false;
};

}  // namespace pagoda::loadgen
