#include "kernels/cpu/attention_probe.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/paged_attention_impl.h"

namespace pagoda {

void attention_prefix_mass(const PagedAttentionArgs& a, const int32_t* mass_end, float* mass, ThreadPool& pool) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  attention_impl::for_each_job(a, pool, [&](const attention_impl::Job& job) {
    thread_local std::vector<double> scores;
    thread_local std::vector<float> key;  // [head_dim] one key as f32
    key.resize(a.head_dim);
    const int32_t kvh = job.head / group;
    const float* q = a.q + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * a.head_dim;
    const int32_t n = job.n_keys - job.key_begin;
    scores.resize(n);
    double max_score = -INFINITY;
    for (int32_t p = 0; p < n; ++p) {
      kv_load_row(a.kv_dtype, attention_impl::kv_row(a, a.k_cache, job.seq, job.key_begin + p, kvh), a.head_dim,
                  key.data());
      const float* k = key.data();
      double s = 0.0;
      for (int32_t d = 0; d < a.head_dim; ++d) s += static_cast<double>(q[d]) * k[d];
      scores[p] = s * a.scale;
      max_score = std::max(max_score, scores[p]);
    }
    const int32_t counted = std::clamp(mass_end[job.seq] - job.key_begin, 0, n);
    double total = 0.0, inside = 0.0;
    for (int32_t p = 0; p < n; ++p) {
      const double w = std::exp(scores[p] - max_score);
      total += w;
      if (p < counted) inside += w;
    }
    mass[static_cast<int64_t>(job.token) * a.n_heads + job.head] = static_cast<float>(inside / total);
  });
}

}  // namespace pagoda
