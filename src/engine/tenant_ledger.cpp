#include "engine/tenant_ledger.h"

namespace pagoda {

TenantLedger::TenantLedger(const TenantLimitsMap& tenants) {
  for (const auto& [name, limits] : tenants) {
    auto e = std::make_unique<Entry>();
    e->limits = limits;
    entries_.emplace(name, std::move(e));
  }
}

TenantLedger::Entry* TenantLedger::find(const std::string& tenant) const {
  auto it = entries_.find(tenant);
  return it == entries_.end() ? nullptr : it->second.get();
}

bool TenantLedger::try_enter_waiting(Entry& e, int32_t n) {
  if (e.limits.max_waiting <= 0) {
    enter_waiting(e, n);
    return true;
  }
  int32_t now = e.waiting.load(std::memory_order_relaxed);
  do {
    if (now + n > e.limits.max_waiting) {
      e.refused_waiting.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  } while (!e.waiting.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
  return true;
}

std::vector<TenantLedger::Row> TenantLedger::rows() const {
  std::vector<Row> out;
  out.reserve(entries_.size());
  for (const auto& [name, e] : entries_)
    out.push_back({name, e->limits, e->waiting.load(std::memory_order_relaxed),
                   e->running.load(std::memory_order_relaxed), e->kv_blocks.load(std::memory_order_relaxed),
                   e->refused_waiting.load(std::memory_order_relaxed)});
  return out;
}

}  // namespace pagoda
