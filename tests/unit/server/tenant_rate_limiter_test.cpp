#include "server/tenant_rate_limiter.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(TenantRateLimiter, RefusesOverTheWindowAndSaysWhenToRetry) {
  TenantLimitsMap tenants;
  tenants["a"].requests_per_minute = 2;
  tenants["b"].max_running = 1;  // limits, but no rpm: not limited here
  TenantRateLimiter rate(tenants);
  const TenantRateLimiter::Time t0{};
  EXPECT_FALSE(rate.admit("a", t0));
  EXPECT_FALSE(rate.admit("a", t0 + seconds(10)));
  auto wait = rate.admit("a", t0 + seconds(20));
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, milliseconds(40000));  // the first request leaves the window at t0 + 60 s
  EXPECT_EQ(rate.refused("a"), 1);
  EXPECT_FALSE(rate.admit("a", t0 + seconds(60)));  // the first left; the refused one was never counted
  EXPECT_TRUE(rate.admit("a", t0 + seconds(61)));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(rate.admit("b", t0));
  EXPECT_FALSE(rate.admit("", t0));
  EXPECT_FALSE(rate.admit("unknown", t0));
  EXPECT_EQ(rate.refused("b"), 0);
}

}  // namespace
}  // namespace pagoda
