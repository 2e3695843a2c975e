// The fused paged-attention kernel, generic over a "16 floats" vector type, so that the AVX-512, AVX2 and portable
// builds run the same arithmetic and give the same bits (the sources are compiled with -ffp-contract=off; every
// fused multiply-add is explicit).
//
// Isa provides a type V of 16 floats and:
//   zero(), set1(f), load(p, n) (lanes >= n are 0), store(p, v), add, sub, mul, max, fma(a, b, c) = a * b + c
//   (one rounding), round_nearest(v) (ties to even), pow2i(v) (2^v for integral v in [-126, 127]),
//   reduce_sum(v) with the fixed tree below, reduce_max(v);
//   and the exact conversions of stored K/V: load_f16(p, n), load_bf16(p, n), load_i8(p) (16 int8), f16(bits).
// reduce_sum tree: u[i] = l[i] + l[i+8] (i < 8); v[i] = u[i] + u[i+4] (i < 4); w[i] = v[i] + v[i+2] (i < 2);
// sum = w[0] + w[1].
//
// Per (query token, head) job: keys in logical order, in tiles of kKeyTile positions (never physical blocks), so
// the result does not depend on the block size, the batch or the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/paged_attention.h"

namespace pagoda::attention_impl {

constexpr int kMaxHeadVecs = 16;  // head_dim <= 256
constexpr int kMaxGroup = 8;      // query heads per fused job (more share a KV head: several jobs)

struct Job {
  int32_t seq;
  int32_t token;     // row in q / out
  int32_t n_keys;    // the query attends to logical keys [key_begin, n_keys)
  int32_t head;      // the (first) query head
  int32_t key_begin;
  int32_t head_count = 1;  // fused kernel: heads head .. head + head_count - 1, all of one KV head
};

inline void collect_jobs(const PagedAttentionArgs& a, std::vector<Job>& jobs) {
  jobs.clear();
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q_begin = a.cu_seqlens_q[s], q_len = a.cu_seqlens_q[s + 1] - q_begin;
    const int32_t key_begin = a.kv_begin ? a.kv_begin[s] : 0;
    for (int32_t i = 0; i < q_len; ++i)
      for (int32_t h = 0; h < a.n_heads; ++h)
        jobs.push_back({s, q_begin + i, a.seq_lens_kv[s] - q_len + i + 1, h, key_begin});
  }
}

// Bytes of one head's K (or V) row as stored.
inline int64_t head_bytes(const PagedAttentionArgs& a) { return kv_bytes(a.kv_dtype, a.head_dim); }

// Address of the K (or V) row of logical position p of sequence s, kv head kvh, as stored.
inline const uint8_t* kv_row(const PagedAttentionArgs& a, const void* cache, int32_t s, int32_t p, int32_t kvh) {
  const int32_t block = a.block_table[static_cast<int64_t>(s) * a.max_blocks + p / a.block_size];
  const int64_t slot = static_cast<int64_t>(block) * a.block_size + p % a.block_size;
  return static_cast<const uint8_t*>(cache) + (slot * a.n_kv_heads + kvh) * head_bytes(a);
}

// Values 16 * j .. 16 * j + n - 1 of a stored head row as f32 (lanes >= n are 0), exactly (kv/kv_dtype.h).
template <class Isa, KvDtype kT>
inline typename Isa::V load_kv(const uint8_t* row, int j, int n) {
  if constexpr (kT == KvDtype::kF32) {
    return Isa::load(reinterpret_cast<const float*>(row) + 16 * j, n);
  } else if constexpr (kT == KvDtype::kF16) {
    return Isa::load_f16(reinterpret_cast<const uint16_t*>(row) + 16 * j, n);
  } else if constexpr (kT == KvDtype::kBF16) {
    return Isa::load_bf16(reinterpret_cast<const uint16_t*>(row) + 16 * j, n);
  } else {  // Q8_0: head_dim % 32 == 0, so n == 16 and a vector is one half of a block
    const uint8_t* block = row + (j / 2) * kKvQ8BlockBytes;
    uint16_t d;
    std::memcpy(&d, block, 2);
    return Isa::mul(Isa::load_i8(reinterpret_cast<const int8_t*>(block + 2 + 16 * (j % 2))), Isa::set1(Isa::f16(d)));
  }
}

// e^x for x <= 88 (inputs below -87 are clamped there: results ~1e-38 instead of smaller). Cody-Waite range
// reduction and a degree-5 polynomial (the Cephes expf coefficients); about 1 ulp.
template <class Isa>
inline typename Isa::V exp_approx(typename Isa::V x) {
  using V = typename Isa::V;
  x = Isa::max(x, Isa::set1(-87.0f));
  x = Isa::min(x, Isa::set1(88.0f));
  const V n = Isa::round_nearest(Isa::mul(x, Isa::set1(1.44269504088896341f)));
  V r = Isa::fma(n, Isa::set1(-0.693359375f), x);
  r = Isa::fma(n, Isa::set1(2.12194440e-4f), r);
  V p = Isa::set1(1.9875691500e-4f);
  p = Isa::fma(p, r, Isa::set1(1.3981999507e-3f));
  p = Isa::fma(p, r, Isa::set1(8.3334519073e-3f));
  p = Isa::fma(p, r, Isa::set1(4.1665795894e-2f));
  p = Isa::fma(p, r, Isa::set1(1.6666665459e-1f));
  p = Isa::fma(p, r, Isa::set1(5.0000001201e-1f));
  V y = Isa::fma(p, Isa::mul(r, r), r);
  y = Isa::add(y, Isa::set1(1.0f));
  return Isa::mul(y, Isa::pow2i(n));
}

// kVecs > 0: head_dim == 16 * kVecs, known at compile time (full vectors, unrolled); 0: any head_dim.
// kT: the stored K/V type.
//
// One job is `job.head_count` query heads of one token that share a KV head (grouped-query attention): each tile of
// keys is located once and its K/V rows, read from memory for the first head, are in L1 for the others. Every head
// runs exactly the operations it would run alone (its own running max, sum and accumulators, tile by tile), so
// grouping never changes a bit; it only stops a GQA model from streaming the same K/V once per query head.
template <class Isa, int kVecs, KvDtype kT>
void run_job(const PagedAttentionArgs& a, const Job& job) {
  using V = typename Isa::V;
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  const int32_t kvh = job.head / (a.n_heads / a.n_kv_heads);
  const int G = job.head_count;
  // Per head of the group: its query and accumulators (in memory between tiles, in registers within one).
  V qv_all[kMaxGroup][kMaxHeadVecs], acc_all[kMaxGroup][kMaxHeadVecs];
  float running_max[kMaxGroup], running_sum[kMaxGroup];
  for (int g = 0; g < G; ++g) {
    const float* q = a.q + (static_cast<int64_t>(job.token) * a.n_heads + job.head + g) * D;
    for (int j = 0; j < nv; ++j) {
      qv_all[g][j] = Isa::load(q + 16 * j, (kVecs > 0 ? 16 : std::min(16, D - 16 * j)));
      acc_all[g][j] = Isa::zero();
    }
    running_max[g] = -INFINITY;
    running_sum[g] = 0.0f;
  }
  alignas(64) float scores[kKeyTile];
  alignas(64) float weights[kKeyTile];
  static_assert(kKeyTile == 32, "the tile is two vectors of 16");
  const uint8_t* k_rows[kKeyTile];
  const uint8_t* v_rows[kKeyTile];
  const int32_t* table = a.block_table + static_cast<int64_t>(job.seq) * a.max_blocks;
  const int64_t hb = kv_bytes(kT, D);
  const int64_t row_stride = a.n_kv_heads * hb;  // bytes from one slot to the next
  const int64_t head_offset = kvh * hb;
  const uint8_t* k_cache = static_cast<const uint8_t*>(a.k_cache);
  const uint8_t* v_cache = static_cast<const uint8_t*>(a.v_cache);
  // Logical position t0 + i = block_index * block_size + offset; tiles count from the first key attended to.
  int32_t block_index = job.key_begin / a.block_size, offset = job.key_begin % a.block_size;
  for (int32_t t0 = job.key_begin; t0 < job.n_keys; t0 += kKeyTile) {
    const int32_t n = std::min(kKeyTile, job.n_keys - t0);
    // Row addresses of this tile, walking the block table (no division per key).
    for (int32_t i = 0; i < n; ++i) {
      const int64_t slot = static_cast<int64_t>(table[block_index]) * a.block_size + offset;
      k_rows[i] = k_cache + slot * row_stride + head_offset;
      v_rows[i] = v_cache + slot * row_stride + head_offset;
      if (++offset == a.block_size) {
        offset = 0;
        ++block_index;
      }
    }
    for (int g = 0; g < G; ++g) {
      V qv[kMaxHeadVecs], acc[kMaxHeadVecs];
      for (int j = 0; j < nv; ++j) qv[j] = qv_all[g][j], acc[j] = acc_all[g][j];
      // Scores of this tile of keys, read in place through the block table.
      for (int32_t i = 0; i < n; ++i) {
        const uint8_t* k = k_rows[i];
        V d = Isa::zero();
        for (int j = 0; j < nv; ++j)
          d = Isa::fma(qv[j], load_kv<Isa, kT>(k, j, (kVecs > 0 ? 16 : std::min(16, D - 16 * j))), d);
        scores[i] = Isa::reduce_sum(d) * a.scale;
      }
      for (int32_t i = n; i < kKeyTile; ++i) scores[i] = -INFINITY;
      const V s0 = Isa::load(scores, 16), s1 = Isa::load(scores + 16, 16);
      const float tile_max = Isa::reduce_max(Isa::max(s0, s1));
      // Online softmax: rescale what has been accumulated so far to the new maximum, once per tile.
      const float new_max = std::max(running_max[g], tile_max);
      float correction_lanes[16];
      Isa::store(correction_lanes, exp_approx<Isa>(Isa::set1(running_max[g] - new_max)));
      const float correction = running_max[g] == -INFINITY ? 0.0f : correction_lanes[0];
      const V m = Isa::set1(new_max);
      Isa::store(weights, exp_approx<Isa>(Isa::sub(s0, m)));
      Isa::store(weights + 16, exp_approx<Isa>(Isa::sub(s1, m)));
      for (int32_t i = n; i < kKeyTile; ++i) weights[i] = 0.0f;
      const float tile_sum = Isa::reduce_sum(Isa::load(weights, 16)) + Isa::reduce_sum(Isa::load(weights + 16, 16));
      running_sum[g] = running_sum[g] * correction + tile_sum;
      const V c = Isa::set1(correction);
      for (int j = 0; j < nv; ++j) acc[j] = Isa::mul(acc[j], c);
      for (int32_t i = 0; i < n; ++i) {
        const uint8_t* v = v_rows[i];
        const V w = Isa::set1(weights[i]);
        for (int j = 0; j < nv; ++j)
          acc[j] = Isa::fma(w, load_kv<Isa, kT>(v, j, (kVecs > 0 ? 16 : std::min(16, D - 16 * j))), acc[j]);
      }
      running_max[g] = new_max;
      for (int j = 0; j < nv; ++j) acc_all[g][j] = acc[j];
    }
  }
  alignas(64) float lanes[16];
  for (int g = 0; g < G; ++g) {
    float* out = a.out + (static_cast<int64_t>(job.token) * a.n_heads + job.head + g) * D;
    const V inv = Isa::set1(1.0f / running_sum[g]);
    for (int j = 0; j < nv; ++j) {
      const int cnt = (kVecs > 0 ? 16 : std::min(16, D - 16 * j));
      Isa::store(lanes, Isa::mul(acc_all[g][j], inv));
      std::copy(lanes, lanes + cnt, out + 16 * j);
    }
  }
}

// The fused kernel's jobs: a token's query heads that share a KV head together (at most kMaxGroup at a time), unless
// that leaves fewer than two jobs per thread (a short decode batch), when every head is a job of its own.
inline void collect_group_jobs(const PagedAttentionArgs& a, int num_threads, std::vector<Job>& jobs) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  const int32_t chunk = std::min<int32_t>(group, kMaxGroup);
  int64_t tokens = 0;
  for (int32_t s = 0; s < a.num_seqs; ++s) tokens += a.cu_seqlens_q[s + 1] - a.cu_seqlens_q[s];
  const bool grouped = chunk > 1 && tokens * a.n_heads / chunk >= 2 * num_threads;
  const int32_t step = grouped ? chunk : 1;
  jobs.clear();
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q_begin = a.cu_seqlens_q[s], q_len = a.cu_seqlens_q[s + 1] - q_begin;
    const int32_t key_begin = a.kv_begin ? a.kv_begin[s] : 0;
    for (int32_t i = 0; i < q_len; ++i)
      for (int32_t h = 0; h < a.n_heads; h += step)
        jobs.push_back({s, q_begin + i, a.seq_lens_kv[s] - q_len + i + 1, h, key_begin,
                        std::min(step, group - h % group)});
  }
}

// Calls fn(job) for every (token, head) job of the batch, dealt round-robin to the pool's threads: causal rows
// differ in length, so contiguous ranges would load the threads unevenly.
template <typename Fn>
void for_each_job(const PagedAttentionArgs& a, ThreadPool& pool, Fn&& fn) {
  thread_local std::vector<Job> jobs;
  collect_jobs(a, jobs);
  const int nt = pool.num_threads();
  const std::vector<Job>& all = jobs;
  pool.run([&](int tid) {
    for (size_t j = tid; j < all.size(); j += nt) fn(all[j]);
  });
}

template <class Isa, KvDtype kT>
void paged_attention_typed(const PagedAttentionArgs& a, ThreadPool& pool) {
  auto run_all = [&](auto job_fn) {
    thread_local std::vector<Job> jobs;
    collect_group_jobs(a, pool.num_threads(), jobs);
    const int nt = pool.num_threads();
    const std::vector<Job>& all = jobs;
    pool.run([&](int tid) {
      for (size_t j = tid; j < all.size(); j += nt) job_fn(a, all[j]);
    });
  };
  switch (a.head_dim) {
    case 64: return run_all(run_job<Isa, 4, kT>);
    case 128: return run_all(run_job<Isa, 8, kT>);
    default: return run_all(run_job<Isa, 0, kT>);
  }
}

template <class Isa>
void paged_attention_with(const PagedAttentionArgs& a, ThreadPool& pool) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: return paged_attention_typed<Isa, KvDtype::kF32>(a, pool);
    case KvDtype::kF16: return paged_attention_typed<Isa, KvDtype::kF16>(a, pool);
    case KvDtype::kBF16: return paged_attention_typed<Isa, KvDtype::kBF16>(a, pool);
    case KvDtype::kQ8_0: return paged_attention_typed<Isa, KvDtype::kQ8_0>(a, pool);
  }
}

}  // namespace pagoda::attention_impl
