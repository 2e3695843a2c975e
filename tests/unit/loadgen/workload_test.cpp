#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pagoda::loadgen {
namespace {

TEST(Workload, PromptsShareThePrefixAndStayInTheIdRange) {
  Rng rng(0);
  const auto prefix = random_token_ids(rng, 32, 500);
  const auto prompts = make_prompts(rng, prefix, 8, 64, 500);
  ASSERT_EQ(prompts.size(), 8u);
  for (const auto& p : prompts) {
    ASSERT_EQ(p.size(), 96u);
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), p.begin()));
    for (int32_t id : p) {
      EXPECT_GE(id, kMinTokenId);
      EXPECT_LT(id, 500);
    }
  }
  EXPECT_NE(prompts[0], prompts[1]);  // unique tails
}

TEST(Workload, SameSeedSamePrompts) {
  Rng a(42), b(42), c(43);
  EXPECT_EQ(make_prompts(a, {}, 4, 16, 100), make_prompts(b, {}, 4, 16, 100));
  Rng d(42);
  EXPECT_NE(make_prompts(d, {}, 4, 16, 100), make_prompts(c, {}, 4, 16, 100));
}

TEST(Workload, ArrivalsArePoissonWithTheGivenRate) {
  Rng rng(7);
  const int64_t n = 20000;
  const auto t = arrival_times(rng, n, 50.0);
  ASSERT_EQ(t.size(), static_cast<size_t>(n));
  EXPECT_EQ(t[0], 0);
  for (size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
  // Mean gap 1/50 s; with 20000 gaps the sample mean is within 3% with overwhelming probability (seeded anyway).
  EXPECT_NEAR(t.back() / (n - 1), 0.02, 0.02 * 0.03);
}

TEST(Workload, InfiniteRateSendsEverythingAtOnce) {
  Rng rng(7);
  for (double s : arrival_times(rng, 5, INFINITY)) EXPECT_EQ(s, 0);
}

}  // namespace
}  // namespace pagoda::loadgen
