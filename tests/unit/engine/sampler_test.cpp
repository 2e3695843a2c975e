#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
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

namespace pagoda {
namespace {

TEST(SamplerExtensions, MinPDropsUnlikelyTokens) {
  // p(0) ~ 0.71, p(1) ~ 0.26, p(2..3) ~ 0.01 each: min_p 0.1 keeps only tokens 0 and 1.
  std::vector<float> logits = {3.0f, 2.0f, -1.0f, -1.0f};
  SamplingParams p{1.0f, 0, 1.0f, 5};
  p.min_p = 0.1f;
  Sampler s(p);
  std::set<int32_t> seen;
  for (int i = 0; i < 3000; ++i) seen.insert(s.sample(logits));
  EXPECT_EQ(seen, (std::set<int32_t>{0, 1}));
}

TEST(SamplerExtensions, PenaltiesChangeTheGreedyChoice) {
  std::vector<float> logits = {2.0f, 1.9f, 0.5f};
  std::vector<int32_t> prompt = {7};
  std::vector<int32_t> output = {0, 0};
  SamplingParams greedy{0.0f, 0, 1.0f, 0};
  EXPECT_EQ(Sampler(greedy).sample(logits, prompt, output), 0);
  SamplingParams freq = greedy;
  freq.frequency_penalty = 0.1f;  // 2.0 - 2 * 0.1 = 1.8 < 1.9
  EXPECT_EQ(Sampler(freq).sample(logits, prompt, output), 1);
  SamplingParams presence = greedy;
  presence.presence_penalty = 0.05f;  // 1.95 > 1.9: still token 0
  EXPECT_EQ(Sampler(presence).sample(logits, prompt, output), 0);
  presence.presence_penalty = 0.2f;
  EXPECT_EQ(Sampler(presence).sample(logits, prompt, output), 1);
  SamplingParams rep = greedy;
  rep.repetition_penalty = 1.1f;  // 2.0 / 1.1 = 1.82 < 1.9
  EXPECT_EQ(Sampler(rep).sample(logits, prompt, output), 1);
  // The repetition penalty also covers prompt tokens: with no output yet, prompt {0} drops token 0 below token 1.
  EXPECT_EQ(Sampler(rep).sample(logits, std::vector<int32_t>{0}, {}), 1);
}

TEST(SamplerExtensions, LogprobsAreALogSoftmaxWithTopAlternatives) {
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  std::vector<TokenLogprob> top;
  const float lp = token_logprobs(logits, 2, 3, &top);
  double z = 0;
  for (float l : logits) z += std::exp(l);
  EXPECT_NEAR(lp, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, 1);  // tie with 3: lower id first
  EXPECT_EQ(top[1].id, 3);
  EXPECT_EQ(top[2].id, 2);
  EXPECT_NEAR(top[2].logprob, lp, 1e-7);
}

TEST(SamplerExtensions, ValidateNamesTheBadField) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_NE(p.validate().error().message.find("top_p"), std::string::npos);
  p = SamplingParams{};
  p.frequency_penalty = 3.0f;
  EXPECT_NE(p.validate().error().message.find("frequency_penalty"), std::string::npos);
  EXPECT_TRUE(SamplingParams{}.validate().ok());
}

TEST(Sampler, LogitBiasShiftsGreedyAndSampledChoices) {
  const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 4.0f};
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.logit_bias = {{1, -100.0f}};  // ban the best token: the runner-up wins
  EXPECT_EQ(Sampler(greedy).sample(logits), 3);
  greedy.logit_bias = {{0, 10.0f}};
  EXPECT_EQ(Sampler(greedy).sample(logits), 0);
  greedy.logit_bias = {{99, 10.0f}};  // outside this vocabulary: ignored here, refused at admission
  EXPECT_EQ(Sampler(greedy).sample(logits), 1);
  SamplingParams sampled;
  sampled.temperature = 1.0f;
  sampled.top_k = 0;
  sampled.top_p = 1.0f;
  sampled.logit_bias = {{1, -100.0f}, {3, -100.0f}, {0, -100.0f}};
  Sampler s(sampled);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits), 2);
  sampled.logit_bias = {{1, 101.0f}};
  EXPECT_FALSE(sampled.validate().ok());
  sampled.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(sampled.validate().ok());
}

}  // namespace
}  // namespace pagoda
