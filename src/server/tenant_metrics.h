// The per-tenant families of /metrics: waiting requests, running sequences and KV blocks (gauges), their limits,
// and requests refused with 429 (counter, by reason). Label cardinality is bounded: only tenants with limits in
// the API keys file have series, and only the first kMaxTenantSeries of them by name; the rest are summed under
// tenant="_other".
#pragma once

#include <string>
#include <vector>

#include "engine/tenant_ledger.h"
#include "server/tenant_rate_limiter.h"

namespace pagoda {

constexpr size_t kMaxTenantSeries = 64;

std::string render_tenant_metrics(const std::vector<TenantLedger::Row>& rows, const TenantRateLimiter& rate,
                                  const std::string& model_name);

}  // namespace pagoda
