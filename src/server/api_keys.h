// API keys and the tenants they belong to. `--api-key KEY` is one key with no tenant; `--api-keys-file FILE` holds
// one key per line as `TENANT KEY [OPTION=VALUE ...]` ('#' starts a comment, blank lines are skipped). A tenant's
// requests share prefix-cache blocks only with that tenant's requests (the tenant is part of the cache namespace).
// The options are the tenant's limits (engine/tenant_limits.h): max_running=N, max_waiting=N, max_kv_blocks=N,
// kv_share=F (0 < F <= 1) and rpm=N. A tenant with several keys gives its limits on one line, or repeats them
// identically; two lines with different limits for one tenant are an error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tenant_limits.h"
#include "util/result.h"

namespace pagoda {

class ApiKeys {
 public:
  static Result<ApiKeys> load_file(const std::string& path);
  static Result<ApiKeys> parse(std::string_view text, const std::string& source_name);
  void add(std::string key, std::string tenant);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // The tenant of `key` (empty string for a key without one); nullopt when the key is unknown. The comparison
  // takes the same time wherever the keys differ, so response timing does not reveal a key's prefix.
  std::optional<std::string> tenant_of(std::string_view key) const;
  // Every tenant that has limits (tenants without options are absent).
  const TenantLimitsMap& tenant_limits() const { return limits_; }
  // Constant-time in the contents (not the lengths): for secrets compared against a request's header.
  static bool equal_constant_time(std::string_view a, std::string_view b);

 private:
  struct Entry {
    std::string key, tenant;
  };
  std::vector<Entry> entries_;
  TenantLimitsMap limits_;
};

}  // namespace pagoda
