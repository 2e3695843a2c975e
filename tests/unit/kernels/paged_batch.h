// Test helper: a batch of sequences' logical K/V/Q stored into a shuffled paged pool, with its attention metadata.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "util/rng.h"

namespace pagoda {

struct SeqSpec {
  int32_t kv_len;
  int32_t q_len;  // 1 = decode; > 1 = a prefill chunk ending at kv_len
};

// Logical K/V of each sequence, stored into a paged pool with shuffled physical blocks.
struct PagedBatch {
  int32_t block_size, n_heads, n_kv_heads, head_dim;
  std::vector<std::vector<float>> k_logical, v_logical;  // per seq: [kv_len, n_kv_heads, head_dim]
  std::vector<float> q;                                  // [num_tokens, n_heads, head_dim]
  std::vector<float> k_pool, v_pool;
  std::vector<int32_t> cu_seqlens_q, seq_lens_kv, block_table;
  int32_t max_blocks = 0;
  std::vector<int32_t> kv_begin;  // [num_seqs] or empty (every query starts at key 0)

  PagedAttentionArgs args(float* out) const {
    PagedAttentionArgs a;
    a.q = q.data();
    a.k_cache = k_pool.data();
    a.v_cache = v_pool.data();
    a.cu_seqlens_q = cu_seqlens_q.data();
    a.seq_lens_kv = seq_lens_kv.data();
    a.block_table = block_table.data();
    a.kv_begin = kv_begin.empty() ? nullptr : kv_begin.data();
    a.out = out;
    a.num_seqs = static_cast<int32_t>(seq_lens_kv.size());
    a.max_blocks = max_blocks;
    a.block_size = block_size;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    return a;
  }
  size_t out_size() const { return q.size(); }
};

// Stores b.k_logical / b.v_logical (one entry per spec, [kv_len, n_kv_heads, head_dim] each) into a paged pool
// with shuffled physical blocks (the shuffle drawn from `seed`), and fills the attention metadata.
inline void pack_batch(PagedBatch& b, const std::vector<SeqSpec>& specs, uint64_t seed) {
  const int32_t block_size = b.block_size, row = b.n_kv_heads * b.head_dim;
  int32_t total_blocks = 0;
  b.cu_seqlens_q = {0};
  b.seq_lens_kv.clear();
  b.max_blocks = 0;
  for (const auto& s : specs) {
    b.cu_seqlens_q.push_back(b.cu_seqlens_q.back() + s.q_len);
    b.seq_lens_kv.push_back(s.kv_len);
    const int32_t nb = (s.kv_len + block_size - 1) / block_size;
    b.max_blocks = std::max(b.max_blocks, nb);
    total_blocks += nb;
  }
  // Physical blocks in a shuffled order, plus one spare, so tables are neither contiguous nor sorted.
  std::vector<int32_t> physical(total_blocks + 1);
  std::iota(physical.begin(), physical.end(), 0);
  Rng shuffle(seed ^ 0x5eed);
  for (size_t i = physical.size() - 1; i > 0; --i) std::swap(physical[i], physical[shuffle.next_u64() % (i + 1)]);
  b.k_pool.assign(physical.size() * block_size * row, NAN);  // unused slots are NaN: reading one poisons the output
  b.v_pool.assign(b.k_pool.size(), NAN);
  b.block_table.assign(specs.size() * b.max_blocks, -1);
  size_t next = 0;
  for (size_t s = 0; s < specs.size(); ++s) {
    for (int32_t p = 0; p < specs[s].kv_len; ++p) {
      if (p % block_size == 0) b.block_table[s * b.max_blocks + p / block_size] = physical[next++];
      const int64_t slot =
          static_cast<int64_t>(b.block_table[s * b.max_blocks + p / block_size]) * block_size + p % block_size;
      std::memcpy(&b.k_pool[slot * row], &b.k_logical[s][static_cast<size_t>(p) * row], row * 4);
      std::memcpy(&b.v_pool[slot * row], &b.v_logical[s][static_cast<size_t>(p) * row], row * 4);
    }
  }
}

// Builds K/V/Q from `seed` (so the same seed gives the same logical contents whatever the block size).
inline PagedBatch make_batch(const std::vector<SeqSpec>& specs, int32_t block_size, int32_t n_heads,
                             int32_t n_kv_heads, int32_t head_dim, uint64_t seed) {
  PagedBatch b{block_size, n_heads, n_kv_heads, head_dim, {}, {}, {}, {}, {}, {0}, {}, {}, 0, {}};
  Rng rng(seed);
  auto rnd = [&] { return static_cast<float>(rng.next_double() * 2 - 1); };
  const int32_t row = n_kv_heads * head_dim;
  for (const auto& s : specs) {
    b.k_logical.emplace_back(static_cast<size_t>(s.kv_len) * row);
    b.v_logical.emplace_back(static_cast<size_t>(s.kv_len) * row);
    for (auto& x : b.k_logical.back()) x = rnd();
    for (auto& x : b.v_logical.back()) x = rnd();
    for (int32_t i = 0; i < s.q_len * n_heads * head_dim; ++i) b.q.push_back(rnd());
  }
  pack_batch(b, specs, seed);
  return b;
}

}  // namespace pagoda
