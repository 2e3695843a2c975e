// The synthetic workload of a serving benchmark: prompts of random token ids, and request arrival times.
//
// Prompts are token-id arrays so their lengths are exact on any server and model: a shared prefix (the same for
// every prompt of a benchmark, or one of several, as system prompts of different applications are, to exercise
// prefix caching and cache-aware routing) followed by ids unique to the prompt. Ids are drawn uniformly from
// [kMinTokenId, vocab_size), above the low ids where vocabularies keep control tokens (BOS, EOS, byte fallbacks of
// tiny models). For servers and routers that take only text prompts, token_ids_as_text spells each id as a word.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/rng.h"

namespace pagoda::loadgen {

constexpr int32_t kMinTokenId = 10;

// n ids drawn uniformly from [kMinTokenId, vocab_size); vocab_size > kMinTokenId.
std::vector<int32_t> random_token_ids(Rng& rng, int64_t n, int32_t vocab_size);

// num_prompts prompts, each `prefix` followed by unique_len fresh random ids.
std::vector<std::vector<int32_t>> make_prompts(Rng& rng, const std::vector<int32_t>& prefix, int64_t num_prompts,
                                               int64_t unique_len, int32_t vocab_size);

// num_prompts prompts, each one of `prefixes` (drawn uniformly; no draw when there is one; none when the list is
// empty) followed by unique_len fresh random ids.
std::vector<std::vector<int32_t>> make_prompts_from_prefixes(Rng& rng,
                                                             const std::vector<std::vector<int32_t>>& prefixes,
                                                             int64_t num_prompts, int64_t unique_len, int32_t vocab_size);

// The ids as text: each id becomes one made-up word of two syllables (" kamo"), the same word for the same id and
// distinct words for ids below 4096 + kMinTokenId, so prompts that share ids share text. How many tokens the text
// is depends on the server's tokenizer (SmolLM2's: about 2 per word); a benchmark reads it from the usage.
std::string token_ids_as_text(const std::vector<int32_t>& ids);

// Send times in seconds from the start of a round for n requests: a Poisson process of `rate` requests per second
// (exponential gaps, the first request at 0), or all at 0 when rate is infinite.
std::vector<double> arrival_times(Rng& rng, int64_t n, double rate);

}  // namespace pagoda::loadgen
