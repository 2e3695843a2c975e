// What each configured tenant holds of the engine, readable from any thread: requests waiting for admission
// (counted at submit, so a full queue is refused there, before anything is streamed), running sequences and KV
// blocks (published by the engine thread after every step), and refusals. The set of tenants is fixed when the
// engine is created (the API keys file's tenants with limits), so the metrics' tenant label is bounded by it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/tenant_limits.h"

namespace pagoda {

class TenantLedger {
 public:
  struct Entry {
    TenantLimits limits;
    std::atomic<int32_t> waiting{0};    // requests submitted and not admitted yet
    std::atomic<int32_t> running{0};    // running sequences after the last step
    std::atomic<int32_t> kv_blocks{0};  // their block-table entries after the last step
    std::atomic<int64_t> refused_waiting{0};  // requests refused because max_waiting were waiting
  };
  struct Row {
    std::string tenant;
    TenantLimits limits;
    int32_t waiting = 0, running = 0, kv_blocks = 0;
    int64_t refused_waiting = 0;
  };

  explicit TenantLedger(const TenantLimitsMap& tenants);

  // Null for a tenant without limits (and for no tenant).
  Entry* find(const std::string& tenant) const;
  // Counts `n` more waiting requests, unless that would make more than the tenant's max_waiting: then nothing is
  // counted, the refusal is, and the answer is false.
  static bool try_enter_waiting(Entry& e, int32_t n);
  static void enter_waiting(Entry& e, int32_t n) { e.waiting.fetch_add(n, std::memory_order_relaxed); }
  static void leave_waiting(Entry& e) { e.waiting.fetch_sub(1, std::memory_order_relaxed); }

  std::vector<Row> rows() const;  // by tenant name
  bool empty() const { return entries_.empty(); }

 private:
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

}  // namespace pagoda
