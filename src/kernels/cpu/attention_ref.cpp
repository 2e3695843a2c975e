#include "kernels/cpu/attention_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/dot.h"

namespace pagoda {

void attention_contiguous(const ContiguousAttentionArgs& a, ThreadPool& pool) {
  const int64_t group = a.n_heads / a.n_kv_heads;
  const int64_t kv_stride = a.n_kv_heads * a.head_dim;
  const int64_t num_jobs = a.num_tokens * a.n_heads;
  const int nt = pool.num_threads();
  // Causal rows get longer with t, so jobs are dealt round-robin to keep the threads evenly loaded.
  pool.run([&](int tid) {
    thread_local std::vector<float> scores;
    scores.resize(a.first_pos + a.num_tokens);
    for (int64_t job = tid; job < num_jobs; job += nt) {
      const int64_t t = job / a.n_heads;
      const int64_t h = job % a.n_heads;
      const int64_t kvh = h / group;
      const int64_t n_keys = a.first_pos + t + 1;
      const float* q = a.q + (t * a.n_heads + h) * a.head_dim;
      float max_score = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* k = a.k_cache + j * kv_stride + kvh * a.head_dim;
        scores[j] = dot_f32(q, k, a.head_dim) * a.scale;
        max_score = std::max(max_score, scores[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < n_keys; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv_sum = static_cast<float>(1.0 / sum);
      float* out = a.out + (t * a.n_heads + h) * a.head_dim;
      std::fill(out, out + a.head_dim, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* v = a.v_cache + j * kv_stride + kvh * a.head_dim;
        const float p = scores[j] * inv_sum;
        for (int64_t d = 0; d < a.head_dim; ++d) out[d] += p * v[d];
      }
    }
  });
}

}  // namespace pagoda
