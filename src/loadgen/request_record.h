// What one benchmark request measured: the timing of its streamed tokens, or why it failed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::loadgen {

struct RequestRecord {
  int64_t input_tokens = 0;          // prompt length sent (text prompts: usage.prompt_tokens, else 0)
  double sent_s = 0;                 // round start -> this request sent (run_round; 0 for send_one)
  std::optional<std::string> error;  // set when the request failed; the fields below are then not measured
  double ttft_s = 0;                 // send -> first token chunk
  double e2e_s = 0;                  // send -> end of the response
  std::vector<double> itl_s;         // gaps between successive token chunks [token chunks - 1]
  int64_t output_tokens = 0;         // usage.completion_tokens, else the number of token chunks
  std::optional<int64_t> reported_prompt_tokens;  // usage.prompt_tokens, when the stream carried it
  std::optional<int64_t> cached_prompt_tokens;    // usage.prompt_tokens_details.cached_tokens, when it did

  bool ok() const { return !error; }

  // Time per output token after the first; only defined for more than one output token.
  std::optional<double> tpot_s() const {
    if (!ok() || output_tokens <= 1) return std::nullopt;
    return (e2e_s - ttft_s) / static_cast<double>(output_tokens - 1);
  }
};

}  // namespace pagoda::loadgen
