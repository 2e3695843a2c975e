#include "engine/tenant_ledger.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace pagoda {
namespace {

TEST(TenantLedger, MaxWaitingRefusesAtomicallyAndCountsRefusals) {
  TenantLimitsMap tenants;
  tenants["a"].max_waiting = 3;
  tenants["b"].max_running = 1;  // no max_waiting: never refused
  TenantLedger ledger(tenants);
  EXPECT_EQ(ledger.find("c"), nullptr);
  EXPECT_EQ(ledger.find(""), nullptr);
  TenantLedger::Entry& a = *ledger.find("a");
  // Eight threads race for the three places, a hundred times over.
  for (int round = 0; round < 100; ++round) {
    std::atomic<int> admitted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] { admitted += TenantLedger::try_enter_waiting(a, 1) ? 1 : 0; });
    for (auto& t : threads) t.join();
    ASSERT_EQ(admitted.load(), 3) << "round " << round;
    for (int i = 0; i < 3; ++i) TenantLedger::leave_waiting(a);
  }
  EXPECT_EQ(a.waiting.load(), 0);
  EXPECT_EQ(a.refused_waiting.load(), 500);
  EXPECT_FALSE(TenantLedger::try_enter_waiting(a, 4));  // a group larger than the limit: refused whole
  EXPECT_EQ(a.waiting.load(), 0);
  TenantLedger::Entry& b = *ledger.find("b");
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(TenantLedger::try_enter_waiting(b, 1));
  const auto rows = ledger.rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].tenant, "a");
  EXPECT_EQ(rows[0].refused_waiting, 501);
  EXPECT_EQ(rows[1].waiting, 1000);
}

TEST(TenantLimits, KvShareBecomesBlocksRoundedUp) {
  TenantLimitsMap tenants;
  tenants["a"].kv_share = 0.25;
  tenants["b"].kv_share = 1e-9;
  tenants["c"].max_kv_blocks = 7;
  const TenantLimitsMap r = with_kv_share_in_blocks(tenants, 1001);
  EXPECT_EQ(r.at("a").max_kv_blocks, 251);
  EXPECT_EQ(r.at("b").max_kv_blocks, 1);
  EXPECT_EQ(r.at("c").max_kv_blocks, 7);
}

}  // namespace
}  // namespace pagoda
