#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/dot.h"

namespace pagoda {
namespace {

// One (query token, head) job of the batch.
struct Job {
  int32_t seq;
  int32_t token;   // row in q / out
  int32_t n_keys;  // keys this query attends to
  int32_t head;
};

// Jobs for every (token, head) pair, longest first is not needed: they are dealt round-robin.
void collect_jobs(const PagedAttentionArgs& a, std::vector<Job>& jobs) {
  jobs.clear();
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q_begin = a.cu_seqlens_q[s], q_len = a.cu_seqlens_q[s + 1] - q_begin;
    for (int32_t i = 0; i < q_len; ++i)
      for (int32_t h = 0; h < a.n_heads; ++h) jobs.push_back({s, q_begin + i, a.seq_lens_kv[s] - q_len + i + 1, h});
  }
}

template <typename Fn>
void run_jobs(const PagedAttentionArgs& a, ThreadPool& pool, Fn&& fn) {
  thread_local std::vector<Job> jobs;
  collect_jobs(a, jobs);
  const int nt = pool.num_threads();
  const std::vector<Job>& all = jobs;
  // Round-robin: causal rows differ in length, so contiguous ranges would load the threads unevenly.
  pool.run([&](int tid) {
    for (size_t j = tid; j < all.size(); j += nt) fn(all[j]);
  });
}

// Address of the K (or V) row of logical position p of sequence s, kv head kvh.
inline const float* kv_row(const PagedAttentionArgs& a, const float* cache, int32_t s, int32_t p, int32_t kvh) {
  const int32_t block = a.block_table[static_cast<int64_t>(s) * a.max_blocks + p / a.block_size];
  const int64_t slot = static_cast<int64_t>(block) * a.block_size + p % a.block_size;
  return cache + (slot * a.n_kv_heads + kvh) * a.head_dim;
}

}  // namespace

void paged_attention_reference(const PagedAttentionArgs& a, ThreadPool& pool) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  run_jobs(a, pool, [&](const Job& job) {
    thread_local std::vector<float> k, v, scores;
    const int32_t kvh = job.head / group;
    // Gather this sequence's keys and values for the head into contiguous buffers.
    k.resize(static_cast<size_t>(job.n_keys) * a.head_dim);
    v.resize(k.size());
    for (int32_t p = 0; p < job.n_keys; ++p) {
      std::memcpy(&k[static_cast<size_t>(p) * a.head_dim], kv_row(a, a.k_cache, job.seq, p, kvh), a.head_dim * 4);
      std::memcpy(&v[static_cast<size_t>(p) * a.head_dim], kv_row(a, a.v_cache, job.seq, p, kvh), a.head_dim * 4);
    }
    const float* q = a.q + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * a.head_dim;
    scores.resize(job.n_keys);
    double max_score = -INFINITY;
    for (int32_t p = 0; p < job.n_keys; ++p) {
      double s = 0.0;
      for (int32_t d = 0; d < a.head_dim; ++d)
        s += static_cast<double>(q[d]) * k[static_cast<size_t>(p) * a.head_dim + d];
      scores[p] = static_cast<float>(s * a.scale);
      max_score = std::max(max_score, static_cast<double>(scores[p]));
    }
    double sum = 0.0;
    std::vector<double> weights(job.n_keys);
    for (int32_t p = 0; p < job.n_keys; ++p) sum += weights[p] = std::exp(scores[p] - max_score);
    float* out = a.out + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * a.head_dim;
    for (int32_t d = 0; d < a.head_dim; ++d) {
      double acc = 0.0;
      for (int32_t p = 0; p < job.n_keys; ++p) acc += weights[p] * v[static_cast<size_t>(p) * a.head_dim + d];
      out[d] = static_cast<float>(acc / sum);
    }
  });
}

void paged_attention(const PagedAttentionArgs& a, ThreadPool& pool) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  run_jobs(a, pool, [&](const Job& job) {
    thread_local std::vector<float> acc;
    const int32_t kvh = job.head / group;
    const int32_t D = a.head_dim;
    const float* q = a.q + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * D;
    acc.assign(D, 0.0f);
    float running_max = -INFINITY;
    float running_sum = 0.0f;
    float scores[kKeyTile];
    for (int32_t t0 = 0; t0 < job.n_keys; t0 += kKeyTile) {
      const int32_t n = std::min(kKeyTile, job.n_keys - t0);
      // Scores of this tile of keys, read in place through the block table.
      float tile_max = -INFINITY;
      for (int32_t i = 0; i < n; ++i) {
        scores[i] = dot_f32(q, kv_row(a, a.k_cache, job.seq, t0 + i, kvh), D) * a.scale;
        tile_max = std::max(tile_max, scores[i]);
      }
      // Online softmax: rescale what has been accumulated so far to the new maximum, once per tile.
      const float new_max = std::max(running_max, tile_max);
      const float correction = std::exp(running_max - new_max);  // 0 on the first tile
      running_sum *= correction;
      for (int32_t d = 0; d < D; ++d) acc[d] *= correction;
      for (int32_t i = 0; i < n; ++i) {
        const float w = std::exp(scores[i] - new_max);
        running_sum += w;
        const float* v = kv_row(a, a.v_cache, job.seq, t0 + i, kvh);
        for (int32_t d = 0; d < D; ++d) acc[d] += w * v[d];
      }
      running_max = new_max;
    }
    float* out = a.out + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * D;
    const float inv = 1.0f / running_sum;
    for (int32_t d = 0; d < D; ++d) out[d] = acc[d] * inv;
  });
}

}  // namespace pagoda
