// Token sampling from logits, per sequence: penalties, then greedy or temperature with top-k, top-p and min-p,
// from the sequence's own seeded generator (so a seed gives the same tokens whatever else shares the batch).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"
#include "util/rng.h"

namespace pagoda {

struct SamplingParams {
  float temperature = 0.8f;  // <= 0 means greedy
  int32_t top_k = 40;        // <= 0 means the whole vocabulary
  float top_p = 0.95f;       // 1 disables
  uint64_t seed = 0;
  float min_p = 0.0f;               // drop tokens below min_p x the top token's probability; 0 disables
  float repetition_penalty = 1.0f;  // > 1 discourages every token of the prompt and output (1 disables)
  float presence_penalty = 0.0f;    // subtracted once from the logit of each token already in the output
  float frequency_penalty = 0.0f;   // subtracted per occurrence in the output
  std::vector<std::pair<int32_t, float>> logit_bias = {};  // (token id, added to its logit), after the penalties

  // An Error naming the first field out of range (for request validation).
  Status validate() const;
  bool adjusts_logits() const { return has_penalties() || !logit_bias.empty(); }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

  // Picks the next token. prompt and output are the sequence's history, used by the penalties
  // (repetition: prompt and output, as vLLM and Hugging Face do; presence and frequency: output only).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> prompt = {},
                 std::span<const int32_t> output = {});

  const SamplingParams& params() const { return params_; }

  // Index of the largest logit; the lowest index wins a tie.
  static int32_t argmax(std::span<const float> logits);

 private:
  SamplingParams params_;
  Rng rng_;
  std::vector<float> penalized_;                       // reused: logits after penalties
  std::vector<int32_t> counts_;                        // reused: occurrences per token in the output
  std::vector<int32_t> seen_;                          // reused: distinct tokens of prompt and output
  std::vector<std::pair<float, int32_t>> candidates_;  // reused: (logit, id)
  std::vector<double> probs_;                          // reused
};

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

// Log-softmax of the raw model logits (before penalties and temperature): the chosen token's log-probability and
// the top_n most likely tokens (highest first, ties by lower id).
float token_logprobs(std::span<const float> logits, int32_t chosen, int32_t top_n, std::vector<TokenLogprob>* top);

}  // namespace pagoda
