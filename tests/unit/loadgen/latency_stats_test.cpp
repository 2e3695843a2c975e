#include "loadgen/latency_stats.h"

#include <gtest/gtest.h>

namespace pagoda::loadgen {

TEST(LatencyStats, PercentilesInterpolateLinearlyBetweenRanks) {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(percentile(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(sorted, 100), 10);
  EXPECT_DOUBLE_EQ(percentile(sorted, 50), 5.5);     // rank 4.5
  EXPECT_NEAR(percentile(sorted, 95), 9.55, 1e-12);  // rank 8.55
  EXPECT_NEAR(percentile(sorted, 99), 9.91, 1e-12);  // rank 8.91
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
}

TEST(LatencyStats, SummarySortsItsInput) {
  // Sorted: 2 10 10 20 40 50. Median: rank 2.5; p95: rank 4.75; p99: rank 4.95.
  const LatencySummary s = summarize({40, 10, 50, 20, 10, 2});
  EXPECT_EQ(s.count, 6u);
  EXPECT_DOUBLE_EQ(s.mean, 22);
  EXPECT_DOUBLE_EQ(s.median, 15);
  EXPECT_NEAR(s.p95, 47.5, 1e-12);
  EXPECT_NEAR(s.p99, 49.5, 1e-12);
}

TEST(LatencyStats, EmptySampleHasCountZero) {
  const LatencySummary s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.p99, 0);
}

}  // namespace pagoda::loadgen
