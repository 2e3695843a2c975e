#include "loadgen/run_summary.h"

#include <algorithm>

namespace pagoda::loadgen {
namespace {

nlohmann::ordered_json to_json(const LatencySummary& s) {
  if (s.count == 0) return nullptr;
  return {{"mean", s.mean}, {"median", s.median}, {"p95", s.p95}, {"p99", s.p99}};
}

}  // namespace

bool meets_slo(const RequestRecord& r, const Slo& slo) {
  if (!r.ok()) return false;
  if (slo.ttft_ms && r.ttft_s * 1e3 > *slo.ttft_ms) return false;
  const auto tpot = r.tpot_s();
  if (slo.tpot_ms && tpot && *tpot * 1e3 > *slo.tpot_ms) return false;
  return true;
}

RunSummary summarize_run(int32_t concurrency, const std::vector<RequestRecord>& records, double duration_s,
                         const Slo& slo) {
  RunSummary s;
  s.concurrency = concurrency;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t good = 0;
  for (const auto& r : records) {
    if (!r.ok()) {
      ++s.failed;
      auto same = std::find_if(s.errors.begin(), s.errors.end(), [&](const auto& e) { return e.message == *r.error; });
      if (same != s.errors.end()) {
        ++same->count;
      } else if (s.errors.size() < kMaxErrors) {
        s.errors.push_back({*r.error, 1});
      }
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.input_tokens;
    s.total_output_tokens += r.output_tokens;
    if (r.cached_prompt_tokens) {
      ++s.cache_reported;
      s.cache_hit_requests += *r.cached_prompt_tokens > 0;
      s.total_cached_tokens += *r.cached_prompt_tokens;
    }
    ttft.push_back(r.ttft_s * 1e3);
    e2e.push_back(r.e2e_s * 1e3);
    if (const auto t = r.tpot_s()) tpot.push_back(*t * 1e3);
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
    if (meets_slo(r, slo)) ++good;
  }
  const double per_s = duration_s > 0 ? 1.0 / duration_s : 0.0;
  s.request_throughput = static_cast<double>(s.completed) * per_s;
  s.output_throughput = static_cast<double>(s.total_output_tokens) * per_s;
  if (slo.any()) s.goodput = static_cast<double>(good) * per_s;
  s.ttft_ms = summarize(std::move(ttft));
  s.tpot_ms = summarize(std::move(tpot));
  s.itl_ms = summarize(std::move(itl));
  s.e2e_ms = summarize(std::move(e2e));
  return s;
}

nlohmann::ordered_json to_json(const RunSummary& s) {
  nlohmann::ordered_json j = {{"concurrency", s.concurrency},
                              {"completed", s.completed},
                              {"failed", s.failed},
                              {"duration_s", s.duration_s},
                              {"request_throughput", s.request_throughput},
                              {"output_throughput", s.output_throughput},
                              {"total_input_tokens", s.total_input_tokens},
                              {"total_output_tokens", s.total_output_tokens},
                              {"cache",
                               {{"reported", s.cache_reported},
                                {"hit_requests", s.cache_hit_requests},
                                {"cached_tokens", s.total_cached_tokens}}},
                              {"ttft_ms", to_json(s.ttft_ms)},
                              {"tpot_ms", to_json(s.tpot_ms)},
                              {"itl_ms", to_json(s.itl_ms)},
                              {"e2e_ms", to_json(s.e2e_ms)}};
  if (s.goodput) j["goodput"] = *s.goodput;
  j["errors"] = nlohmann::ordered_json::array();
  for (const auto& e : s.errors) j["errors"].push_back({{"message", e.message}, {"count", e.count}});
  return j;
}

}  // namespace pagoda::loadgen
