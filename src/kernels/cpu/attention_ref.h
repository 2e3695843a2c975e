// Reference causal attention over a contiguous per-sequence KV cache: the plain single-sequence path.
// The paged kernel (issue #3) is checked against this one.
#pragma once

#include <cstdint>

#include "util/thread_pool.h"

namespace pagoda {

struct ContiguousAttentionArgs {
  const float* q = nullptr;        // [num_tokens, n_heads, head_dim]
  const float* k_cache = nullptr;  // [capacity, n_kv_heads, head_dim]; rows 0 .. first_pos + num_tokens - 1 are valid
  const float* v_cache = nullptr;  // [capacity, n_kv_heads, head_dim]
  float* out = nullptr;            // [num_tokens, n_heads, head_dim]
  int64_t num_tokens = 0;
  int64_t first_pos = 0;  // position of query token 0; token t attends to keys 0 .. first_pos + t
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // n_heads % n_kv_heads == 0 (grouped-query attention)
  int64_t head_dim = 0;
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

void attention_contiguous(const ContiguousAttentionArgs& a, ThreadPool& pool);

}  // namespace pagoda
