// The instrumented attention path: how much of each query's attention falls on a leading span of its sequence's
// keys (a verified anchor's), per layer and head. It reads the same q and paged K as the attention kernel and
// writes only its own output, so turning it on never changes a token or a logit; it is off unless a caller asks.
#pragma once

#include <cstdint>

#include "kernels/cpu/paged_attention.h"
#include "util/thread_pool.h"

namespace pagoda {

// For every (query token t, head h) of the batch: the share of its softmax mass (in [0, 1]) on the logical keys
// [kv_begin[s], mass_end[s]) of its sequence s, computed in double from the same scores the attention uses
// (keys it does not attend to count for nothing: a key range hidden by kv_begin gets mass 0).
//   mass_end [num_seqs]            keys counted from the sequence's start (0: nothing, mass 0)
//   mass     [num_tokens, n_heads] output
void attention_prefix_mass(const PagedAttentionArgs& a, const int32_t* mass_end, float* mass, ThreadPool& pool);

}  // namespace pagoda
