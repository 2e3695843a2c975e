#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace pagoda {

Status SamplingParams::validate() const {
  auto bad = [](const std::string& what) { return make_error(what); };
  if (!std::isfinite(temperature) || temperature < 0.0f) return bad("temperature must be a number >= 0");
  if (!(top_p > 0.0f && top_p <= 1.0f)) return bad("top_p must be in (0, 1]");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return bad("min_p must be in [0, 1]");
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
    return bad("repetition_penalty must be a number > 0");
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) return bad("presence_penalty must be in [-2, 2]");
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) return bad("frequency_penalty must be in [-2, 2]");
  for (const auto& [id, bias] : logit_bias)
    if (id < 0 || !(bias >= -100.0f && bias <= 100.0f))
      return bad("logit_bias needs token ids >= 0 and biases in [-100, 100]");
  return Status::success();
}

int32_t Sampler::argmax(std::span<const float> logits) {
  // Two vectorisable passes: the maximum (16 independent running maxima), then its first index.
  const size_t n = logits.size();
  if (n == 0) return 0;
  constexpr size_t kLanes = 16;
  float lanes[kLanes];
  for (size_t l = 0; l < kLanes; ++l) lanes[l] = logits[0];
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) lanes[l] = logits[i + l] > lanes[l] ? logits[i + l] : lanes[l];
  float best = lanes[0];
  for (size_t l = 1; l < kLanes; ++l) best = lanes[l] > best ? lanes[l] : best;
  for (; i < n; ++i) best = logits[i] > best ? logits[i] : best;
  for (size_t j = 0; j < n; ++j)
    if (logits[j] == best) return static_cast<int32_t>(j);
  return 0;  // only NaN everywhere
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt,
                        std::span<const int32_t> output) {
  const bool penalize_history = params_.has_penalties() && (!prompt.empty() || !output.empty());
  if (penalize_history || !params_.logit_bias.empty()) {
    const int32_t n = static_cast<int32_t>(logits.size());
    penalized_.assign(logits.begin(), logits.end());
    counts_.resize(logits.size());
    for (int32_t id : output)
      if (id >= 0 && id < n) ++counts_[id];
    if (params_.repetition_penalty != 1.0f) {
      // Each distinct token of the history once: positive logits shrink, negative ones grow.
      auto penalize = [&](int32_t id) {
        float& l = penalized_[id];
        l = l > 0.0f ? l / params_.repetition_penalty : l * params_.repetition_penalty;
      };
      seen_.assign(prompt.begin(), prompt.end());
      seen_.insert(seen_.end(), output.begin(), output.end());
      std::sort(seen_.begin(), seen_.end());
      seen_.erase(std::unique(seen_.begin(), seen_.end()), seen_.end());
      for (int32_t id : seen_)
        if (id >= 0 && id < n) penalize(id);
    }
    for (int32_t id : output) {
      if (id < 0 || id >= n || counts_[id] == 0) continue;
      penalized_[id] -= params_.frequency_penalty * counts_[id] + params_.presence_penalty;
      counts_[id] = 0;  // once per distinct token; also leaves counts_ zeroed for the next call
    }
    for (const auto& [id, bias] : params_.logit_bias)
      if (id >= 0 && id < n) penalized_[id] += bias;
    logits = penalized_;
  }
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
  probs_.resize(keep);
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs_[i] = std::exp((candidates_[i].first - max_logit) / params_.temperature);
    sum += probs_[i];
  }
  // Top-p: the smallest prefix whose mass reaches top_p.
  if (params_.top_p < 1.0f) {
    double mass = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      mass += probs_[i] / sum;
      if (mass >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  // Min-p: drop tokens less likely than min_p x the most likely one (probs_[0] is the maximum, exp(0) = 1).
  if (params_.min_p > 0.0f) {
    size_t cut = 1;
    while (cut < keep && probs_[cut] >= params_.min_p * probs_[0]) ++cut;
    keep = cut;
  }
  sum = 0.0;
  for (size_t i = 0; i < keep; ++i) sum += probs_[i];
  double r = rng_.next_double() * sum;
  for (size_t i = 0; i < keep; ++i) {
    r -= probs_[i];
    if (r < 0.0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

float token_logprobs(std::span<const float> logits, int32_t chosen, int32_t top_n, std::vector<TokenLogprob>* top) {
  float max_logit = -INFINITY;
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  const double log_z = max_logit + std::log(sum);
  if (top) {
    top->clear();
    const size_t n = std::min(logits.size(), static_cast<size_t>(std::max(top_n, 0)));
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (size_t i = 0; i < n; ++i) top->push_back({ids[i], static_cast<float>(logits[ids[i]] - log_z)});
  }
  return static_cast<float>(logits[chosen] - log_z);
}

}  // namespace pagoda
