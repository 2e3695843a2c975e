#include "server/tenant_metrics.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace pagoda {
namespace {

std::set<std::string> tenant_labels(const std::string& text, const std::string& family) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0) continue;
    const size_t t = line.find("tenant=\"");
    out.insert(line.substr(t + 8, line.find('"', t + 8) - t - 8));
  }
  return out;
}

TEST(TenantMetrics, LabelsAreBoundedAndTheRestSummed) {
  TenantLimitsMap tenants;
  for (int i = 0; i < 100; ++i) tenants["t" + std::to_string(1000 + i)].max_running = 2;
  TenantLedger ledger(tenants);
  for (int i = 0; i < 100; ++i) TenantLedger::enter_waiting(*ledger.find("t" + std::to_string(1000 + i)), 1);
  TenantRateLimiter rate(tenants);
  const std::string text = render_tenant_metrics(ledger.rows(), rate, "m");
  const auto labels = tenant_labels(text, "pagoda:tenant_requests_waiting");
  EXPECT_EQ(labels.size(), kMaxTenantSeries + 1);
  EXPECT_TRUE(labels.count("_other"));
  EXPECT_TRUE(labels.count("t1000"));
  EXPECT_FALSE(labels.count("t1099"));
  // The 36 tenants past the first 64 are summed.
  EXPECT_NE(text.find("pagoda:tenant_requests_waiting{model_name=\"m\",tenant=\"_other\"} 36\n"), std::string::npos);
  EXPECT_NE(text.find("pagoda:tenant_limit_max_running{model_name=\"m\",tenant=\"t1000\"} 2\n"), std::string::npos);
  EXPECT_EQ(render_tenant_metrics({}, rate, "m"), "");
}

TEST(TenantMetrics, LabelValuesAreEscaped) {
  TenantLimitsMap tenants;
  tenants["we\"ird\\name"].max_waiting = 1;
  TenantLedger ledger(tenants);
  const std::string text = render_tenant_metrics(ledger.rows(), TenantRateLimiter(tenants), "m");
  EXPECT_NE(text.find("tenant=\"we\\\"ird\\\\name\"}"), std::string::npos) << text;
}

}  // namespace
}  // namespace pagoda
