#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace pagoda {

int32_t Sampler::argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  return best;
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
  // Highest logit first; ties by lower id, so the order is fully determined.
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = params_.top_k;
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(keep);
  // Softmax at the temperature.
  const float max_logit = candidates_[0].first;
  std::vector<double> probs(keep);
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((candidates_[i].first - max_logit) / params_.temperature);
    sum += probs[i];
  }
  // Top-p: the smallest prefix whose mass reaches top_p.
  if (params_.top_p < 1.0f) {
    double mass = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      mass += probs[i] / sum;
      if (mass >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0.0;
    for (size_t i = 0; i < keep; ++i) sum += probs[i];
  }
  double r = rng_.next_double() * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= probs[i];
    if (r < 0.0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

}  // namespace pagoda
