// Token sampling from logits: greedy, or temperature with top-k and top-p, from a seeded generator.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "util/rng.h"

namespace pagoda {

struct SamplingParams {
  float temperature = 0.8f;  // <= 0 means greedy
  int32_t top_k = 40;        // <= 0 means the whole vocabulary
  float top_p = 0.95f;       // 1 disables
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}
  int32_t sample(std::span<const float> logits);

  // Index of the largest logit; the lowest index wins a tie.
  static int32_t argmax(std::span<const float> logits);

 private:
  SamplingParams params_;
  Rng rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // reused: (logit, id)
};

}  // namespace pagoda
