#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <set>

namespace pagoda {

TEST(Sampler, GreedyPicksArgmaxAndLowestIdOnTies) {
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f};
  Sampler s(SamplingParams{0.0f, 40, 0.95f, 1});
  EXPECT_EQ(s.sample(logits), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
  std::vector<float> logits = {0.5f, 0.2f, 2.5f, 2.4f};
  Sampler s(SamplingParams{1.0f, 1, 1.0f, 7});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits), 2);
}

TEST(Sampler, SameSeedSameTokens) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[i] = static_cast<float>(i % 7) * 0.3f;
  Sampler a(SamplingParams{1.0f, 0, 1.0f, 42}), b(SamplingParams{1.0f, 0, 1.0f, 42}),
      c(SamplingParams{1.0f, 0, 1.0f, 43});
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 64; ++i) {
    sa.push_back(a.sample(logits));
    sb.push_back(b.sample(logits));
    sc.push_back(c.sample(logits));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(Sampler, TopPKeepsOnlyTheNucleus) {
  // Token 0 has ~88% of the mass at temperature 1; top_p 0.5 must always pick it.
  std::vector<float> logits = {3.0f, 1.0f, 0.0f, 0.0f};
  Sampler s(SamplingParams{1.0f, 0, 0.5f, 3});
  for (int i = 0; i < 200; ++i) EXPECT_EQ(s.sample(logits), 0);
  // With top_p 1 every token eventually appears.
  Sampler all(SamplingParams{1.0f, 0, 1.0f, 3});
  std::set<int32_t> seen;
  for (int i = 0; i < 2000; ++i) seen.insert(all.sample(logits));
  EXPECT_EQ(seen.size(), 4u);
}

}  // namespace pagoda
