#include "server/tenant_rate_limiter.h"

namespace pagoda {

TenantRateLimiter::TenantRateLimiter(const TenantLimitsMap& tenants) {
  for (const auto& [name, limits] : tenants)
    if (limits.requests_per_minute > 0) windows_[name].limit = limits.requests_per_minute;
}

std::optional<std::chrono::milliseconds> TenantRateLimiter::admit(const std::string& tenant, Time now) {
  std::lock_guard lock(mu_);
  auto it = windows_.find(tenant);
  if (it == windows_.end()) return std::nullopt;
  Window& w = it->second;
  while (!w.accepted.empty() && w.accepted.front() + kWindow <= now) w.accepted.pop_front();
  if (static_cast<int32_t>(w.accepted.size()) < w.limit) {
    w.accepted.push_back(now);
    return std::nullopt;
  }
  ++w.refused;
  return std::chrono::duration_cast<std::chrono::milliseconds>(w.accepted.front() + kWindow - now);
}

int64_t TenantRateLimiter::refused(const std::string& tenant) const {
  std::lock_guard lock(mu_);
  auto it = windows_.find(tenant);
  return it == windows_.end() ? 0 : it->second.refused;
}

}  // namespace pagoda
