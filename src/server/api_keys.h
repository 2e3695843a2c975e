// API keys and the tenants they belong to. `--api-key KEY` is one key with no tenant; `--api-keys-file FILE` holds
// one key per line as `TENANT KEY` ('#' starts a comment, blank lines are skipped). A tenant's requests share
// prefix-cache blocks only with that tenant's requests (the tenant is part of the cache namespace).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  // Constant-time in the contents (not the lengths): for secrets compared against a request's header.
  static bool equal_constant_time(std::string_view a, std::string_view b);

 private:
  struct Entry {
    std::string key, tenant;
  };
  std::vector<Entry> entries_;
};

}  // namespace pagoda
