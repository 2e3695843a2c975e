#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

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

TEST(Workload, SeveralPrefixesAreEachUsedAndOneIsTheOldSinglePrefixWorkload) {
  Rng rng(3);
  std::vector<std::vector<int32_t>> prefixes;
  for (int k = 0; k < 4; ++k) prefixes.push_back(random_token_ids(rng, 16, 500));
  const auto prompts = make_prompts_from_prefixes(rng, prefixes, 200, 8, 500);
  std::vector<int> uses(prefixes.size(), 0);
  for (const auto& p : prompts) {
    ASSERT_EQ(p.size(), 24u);
    int matches = 0;
    for (size_t k = 0; k < prefixes.size(); ++k)
      if (std::equal(prefixes[k].begin(), prefixes[k].end(), p.begin())) ++uses[k], ++matches;
    EXPECT_EQ(matches, 1);
  }
  for (int u : uses) EXPECT_GT(u, 20);  // 200 draws of 4: each about 50
  // One prefix draws nothing for the choice: the same prompts as the single-prefix form from the same seed.
  Rng a(9), b(9);
  EXPECT_EQ(make_prompts_from_prefixes(a, std::vector<std::vector<int32_t>>{prefixes[0]}, 5, 8, 500),
            make_prompts(b, prefixes[0], 5, 8, 500));
  Rng c(9);
  for (const auto& p : make_prompts_from_prefixes(c, std::vector<std::vector<int32_t>>{}, 5, 8, 500))
    EXPECT_EQ(p.size(), 8u);
}

TEST(Workload, IdsAsTextAreStableDistinctWords) {
  EXPECT_EQ(token_ids_as_text({10, 11}), " baba daba");
  EXPECT_EQ(token_ids_as_text({10, 11}), token_ids_as_text({10, 11}));
  std::set<std::string> words;
  for (int32_t id = kMinTokenId; id < kMinTokenId + 4096; ++id) {
    const std::string w = token_ids_as_text({id});
    ASSERT_EQ(w.size(), 5u);
    ASSERT_EQ(w[0], ' ');
    words.insert(w);
  }
  EXPECT_EQ(words.size(), 4096u);
  // A shared id prefix is a shared text prefix.
  const std::string a = token_ids_as_text({100, 200, 300}), b = token_ids_as_text({100, 200, 301});
  EXPECT_EQ(a.substr(0, 10), b.substr(0, 10));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace pagoda::loadgen
