// What one tenant (the owner of an API key, server/api_keys.h) may hold of the engine at once. Zero means "no
// limit" everywhere, so a tenant without options, and every request without a tenant, is served as before.
// Over max_running or max_kv_blocks a request waits its turn; over max_waiting or requests_per_minute the server
// answers 429 with Retry-After before anything is streamed. docs/engine.md "Sharing between tenants".
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

namespace pagoda {

struct TenantLimits {
  int32_t max_running = 0;          // sequences running at once (admitted, holding KV blocks)
  int32_t max_waiting = 0;          // requests submitted and not yet admitted; one more is refused (429)
  int32_t max_kv_blocks = 0;        // KV blocks its running sequences hold together (shared blocks count per holder)
  double kv_share = 0;              // the same as a share of the pool in (0, 1]; the engine turns it into blocks
  int32_t requests_per_minute = 0;  // requests accepted in any 60 s window; more are refused (429), server side

  bool any() const {
    return max_running > 0 || max_waiting > 0 || max_kv_blocks > 0 || kv_share > 0 || requests_per_minute > 0;
  }
  bool operator==(const TenantLimits&) const = default;
};

// By tenant name. Ordered: the API keys file's tenants in a stable order (metrics labels, reports).
using TenantLimitsMap = std::map<std::string, TenantLimits>;

// The limits with every kv_share turned into max_kv_blocks of a pool of `num_blocks` (rounded up, at least 1).
inline TenantLimitsMap with_kv_share_in_blocks(TenantLimitsMap tenants, int64_t num_blocks) {
  for (auto& [name, limits] : tenants)
    if (limits.kv_share > 0 && limits.max_kv_blocks == 0) {
      const double blocks = limits.kv_share * static_cast<double>(num_blocks);
      limits.max_kv_blocks = static_cast<int32_t>(std::max(1.0, std::ceil(blocks)));
    }
  return tenants;
}

}  // namespace pagoda
