#include "loadgen/workload.h"

#include <cassert>
#include <algorithm>
#include <cmath>

namespace pagoda::loadgen {

std::vector<int32_t> random_token_ids(Rng& rng, int64_t n, int32_t vocab_size) {
  assert(vocab_size > kMinTokenId && n >= 0);
  const uint64_t span = static_cast<uint64_t>(vocab_size - kMinTokenId);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = kMinTokenId + static_cast<int32_t>(rng.next_u64() % span);
  return ids;
}

std::vector<std::vector<int32_t>> make_prompts(Rng& rng, const std::vector<int32_t>& prefix, int64_t num_prompts,
                                               int64_t unique_len, int32_t vocab_size) {
  return make_prompts_from_prefixes(rng, std::vector<std::vector<int32_t>>{prefix}, num_prompts, unique_len,
                                    vocab_size);
}

std::vector<std::vector<int32_t>> make_prompts_from_prefixes(Rng& rng,
                                                             const std::vector<std::vector<int32_t>>& prefixes,
                                                             int64_t num_prompts, int64_t unique_len, int32_t vocab_size) {
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(num_prompts));
  for (auto& p : prompts) {
    if (prefixes.size() == 1) p = prefixes[0];
    if (prefixes.size() > 1) p = prefixes[rng.next_u64() % prefixes.size()];
    const auto tail = random_token_ids(rng, unique_len, vocab_size);
    p.insert(p.end(), tail.begin(), tail.end());
  }
  return prompts;
}

std::string token_ids_as_text(const std::vector<int32_t>& ids) {
  static constexpr const char* kOnsets[] = {"b", "d", "f", "g", "k", "l", "m", "n",
                                            "p", "r", "s", "t", "v", "z", "h", "j"};
  static constexpr const char* kVowels[] = {"a", "e", "i", "o"};
  constexpr int32_t kSyllables = 16 * 4;  // 64 syllables, 4096 two-syllable words
  std::string text;
  for (int32_t id : ids) {
    const int32_t w = std::max(0, id - kMinTokenId);
    const int32_t first = w % kSyllables, second = (w / kSyllables) % kSyllables;
    text += ' ';
    text += kOnsets[first % 16];
    text += kVowels[first / 16];
    text += kOnsets[second % 16];
    text += kVowels[second / 16];
  }
  return text;
}

std::vector<double> arrival_times(Rng& rng, int64_t n, double rate) {
  assert(rate > 0 && n >= 0);
  std::vector<double> times(static_cast<size_t>(n), 0.0);
  if (std::isinf(rate)) return times;
  for (size_t i = 1; i < times.size(); ++i) times[i] = times[i - 1] - std::log1p(-rng.next_double()) / rate;
  return times;
}

}  // namespace pagoda::loadgen
