#include "kernels/cpu/attention_ref.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "util/rng.h"

namespace pagoda {

TEST(AttentionContiguous, MatchesNaiveCausalGqa) {
  const int64_t n_heads = 4, n_kv = 2, hd = 8, first = 3, T = 4, len = first + T;
  Rng rng(1);
  auto fill = [&](std::vector<float>& v) {
    for (auto& x : v) x = static_cast<float>(rng.next_double() * 2 - 1);
  };
  std::vector<float> q(T * n_heads * hd), k(len * n_kv * hd), v(len * n_kv * hd), out(T * n_heads * hd);
  fill(q);
  fill(k);
  fill(v);
  ContiguousAttentionArgs a{q.data(), k.data(), v.data(), out.data(), T, first, n_heads, n_kv, hd, 0.35f};
  ThreadPool pool(2);
  attention_contiguous(a, pool);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < n_heads; ++h) {
      const int64_t kvh = h / (n_heads / n_kv);
      std::vector<double> w;
      double mx = -1e30, sum = 0;
      for (int64_t j = 0; j <= first + t; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += q[(t * n_heads + h) * hd + d] * k[(j * n_kv + kvh) * hd + d];
        w.push_back(dot * 0.35);
        mx = std::max(mx, w.back());
      }
      for (auto& x : w) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < hd; ++d) {
        double ref = 0;
        for (size_t j = 0; j < w.size(); ++j) ref += w[j] / sum * v[(j * n_kv + kvh) * hd + d];
        EXPECT_NEAR(out[(t * n_heads + h) * hd + d], ref, 1e-5);
      }
    }
}

TEST(AttentionContiguous, FutureKeysDoNotLeak) {
  // Changing keys/values after a query's position must not change its output.
  const int64_t n_heads = 2, n_kv = 1, hd = 4, T = 3;
  std::vector<float> q(T * n_heads * hd, 0.5f), k(T * n_kv * hd, 0.1f), v(T * n_kv * hd, 1.0f), out1(T * n_heads * hd),
      out2(T * n_heads * hd);
  ThreadPool pool(1);
  attention_contiguous({q.data(), k.data(), v.data(), out1.data(), T, 0, n_heads, n_kv, hd, 0.5f}, pool);
  for (int64_t d = 0; d < hd; ++d) v[2 * hd + d] = 100.0f;
  attention_contiguous({q.data(), k.data(), v.data(), out2.data(), T, 0, n_heads, n_kv, hd, 0.5f}, pool);
  EXPECT_EQ(0, std::memcmp(out1.data(), out2.data(), sizeof(float) * 2 * n_heads * hd));
  EXPECT_NE(out1[2 * n_heads * hd], out2[2 * n_heads * hd]);
}

}  // namespace pagoda
