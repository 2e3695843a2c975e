// Requests per minute per tenant (the API keys file's rpm=N): a sliding 60 s window over the times of the requests
// it accepted. Over the limit, admit() says how long until the oldest of them leaves the window, the server's
// Retry-After. Thread-safe; tenants without an rpm limit are not tracked.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "engine/tenant_limits.h"

namespace pagoda {

class TenantRateLimiter {
 public:
  using Time = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::seconds kWindow{60};

  explicit TenantRateLimiter(const TenantLimitsMap& tenants);

  // Accepts the request (and counts it), or answers the wait until one would be accepted.
  std::optional<std::chrono::milliseconds> admit(const std::string& tenant, Time now);
  int64_t refused(const std::string& tenant) const;  // requests refused so far

 private:
  struct Window {
    int32_t limit = 0;
    std::deque<Time> accepted;  // within the last kWindow, oldest first; at most `limit`
    int64_t refused = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Window> windows_;
};

}  // namespace pagoda
