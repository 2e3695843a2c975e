#include "kernels/cpu/attention_probe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "paged_batch.h"

namespace pagoda {
namespace {

// The mass of keys [begin, end) for query row t, head h of sequence s, straight from the logical K (double).
double expected_mass(const PagedBatch& b, int32_t s, int32_t t, int32_t i, int32_t h, int32_t begin, int32_t end) {
  const int32_t q_len = b.cu_seqlens_q[s + 1] - b.cu_seqlens_q[s];
  const int32_t n_keys = b.seq_lens_kv[s] - q_len + i + 1;
  const int32_t kvh = h / (b.n_heads / b.n_kv_heads);
  const float* q = b.q.data() + (static_cast<size_t>(t) * b.n_heads + h) * b.head_dim;
  std::vector<double> w;
  double max_score = -INFINITY;
  for (int32_t p = begin; p < n_keys; ++p) {
    const float* k = b.k_logical[s].data() + (static_cast<size_t>(p) * b.n_kv_heads + kvh) * b.head_dim;
    double dot = 0;
    for (int32_t d = 0; d < b.head_dim; ++d) dot += static_cast<double>(q[d]) * k[d];
    w.push_back(dot / std::sqrt(static_cast<double>(b.head_dim)));
    max_score = std::max(max_score, w.back());
  }
  double total = 0, inside = 0;
  for (size_t j = 0; j < w.size(); ++j) {
    const double e = std::exp(w[j] - max_score);
    total += e;
    if (begin + static_cast<int32_t>(j) < end) inside += e;
  }
  return inside / total;
}

TEST(AttentionProbe, MassOnALeadingSpanMatchesADirectSoftmax) {
  const std::vector<SeqSpec> specs = {{45, 45}, {70, 1}, {33, 6}, {5, 5}};
  PagedBatch b = make_batch(specs, 16, 4, 2, 64, 23);
  // Scale K so the softmax is peaked (mass far from uniform), and repack.
  for (auto& k : b.k_logical)
    for (float& x : k) x *= 6.0f;
  pack_batch(b, specs, 23);
  const std::vector<int32_t> mass_end = {16, 70, 0, 5};
  ThreadPool pool(2);
  std::vector<float> mass(static_cast<size_t>(b.cu_seqlens_q.back()) * b.n_heads, -1.0f);
  attention_prefix_mass(b.args(nullptr), mass_end.data(), mass.data(), pool);
  bool some_partial = false;
  for (int32_t s = 0; s < 4; ++s)
    for (int32_t i = 0; i < specs[s].q_len; ++i)
      for (int32_t h = 0; h < b.n_heads; ++h) {
        const int32_t t = b.cu_seqlens_q[s] + i;
        const float got = mass[static_cast<size_t>(t) * b.n_heads + h];
        const double want = expected_mass(b, s, t, i, h, 0, mass_end[s]);
        ASSERT_NEAR(got, want, 1e-6) << "seq " << s << " query " << i << " head " << h;
        some_partial = some_partial || (want > 0.01 && want < 0.99);
      }
  EXPECT_TRUE(some_partial) << "the test should see masses strictly between 0 and 1";
  // A whole sequence's keys carry all the mass; none carry nothing.
  for (int32_t h = 0; h < b.n_heads; ++h) {
    EXPECT_FLOAT_EQ(mass[static_cast<size_t>(b.cu_seqlens_q[1]) * b.n_heads + h], 1.0f);
    EXPECT_EQ(mass[static_cast<size_t>(b.cu_seqlens_q[2]) * b.n_heads + h], 0.0f);
  }
}

TEST(AttentionProbe, KeysHiddenByKvBeginGetNoMass) {
  const std::vector<SeqSpec> specs = {{40, 2}, {50, 1}};
  PagedBatch b = make_batch(specs, 16, 4, 2, 64, 29);
  b.kv_begin = {16, 10};
  const std::vector<int32_t> mass_end = {16, 20};  // all hidden for seq 0; keys 10..19 visible for seq 1
  ThreadPool pool(1);
  std::vector<float> mass(3 * 4);
  attention_prefix_mass(b.args(nullptr), mass_end.data(), mass.data(), pool);
  for (int32_t h = 0; h < 4; ++h) {
    EXPECT_EQ(mass[h], 0.0f);
    EXPECT_EQ(mass[4 + h], 0.0f);
    EXPECT_NEAR(mass[8 + h], expected_mass(b, 1, 2, 0, h, 10, 20), 1e-6);
    EXPECT_GT(mass[8 + h], 0.0f);
  }
}

}  // namespace
}  // namespace pagoda
