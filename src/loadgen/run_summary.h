// The report of one benchmark round (one concurrency value): counts, throughput, latency distributions in
// milliseconds, goodput under service-level objectives, and the first distinct errors.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/latency_stats.h"
#include "loadgen/request_record.h"

namespace pagoda::loadgen {

// Service-level objectives; one not given is not applied.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;

  bool any() const { return ttft_ms || tpot_ms; }
};

// A successful request meets the SLOs when its TTFT and its TPOT are within them (a request with one output token
// has no TPOT and meets any TPOT objective).
bool meets_slo(const RequestRecord& r, const Slo& slo);

struct ErrorCount {
  std::string message;
  int64_t count = 0;
};

struct RunSummary {
  int32_t concurrency = 0;
  int64_t completed = 0;  // successful requests
  int64_t failed = 0;
  double duration_s = 0;
  double request_throughput = 0;    // completed / duration, req/s
  double output_throughput = 0;     // output tokens of completed requests / duration, tok/s
  int64_t total_input_tokens = 0;   // of completed requests
  int64_t total_output_tokens = 0;  // of completed requests
  // Prompt caching as the server reported it (usage.prompt_tokens_details.cached_tokens), of completed requests:
  // how many reported it, how many of those had any prompt token cached, and the cached tokens in all.
  int64_t cache_reported = 0, cache_hit_requests = 0, total_cached_tokens = 0;
  LatencySummary ttft_ms, tpot_ms, itl_ms, e2e_ms;
  std::optional<double> goodput;   // completed requests meeting the SLOs per second; only when an SLO is given
  std::vector<ErrorCount> errors;  // the first kMaxErrors distinct messages, in order of first occurrence
};

constexpr size_t kMaxErrors = 5;

RunSummary summarize_run(int32_t concurrency, const std::vector<RequestRecord>& records, double duration_s,
                         const Slo& slo);

// {"concurrency", "completed", "failed", "duration_s", "request_throughput", "output_throughput",
//  "total_input_tokens", "total_output_tokens", "cache" ({"reported", "hit_requests", "cached_tokens"}), "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms" (each {"mean", "median",
//  "p95", "p99"}, null when there is no sample), "goodput" (only with an SLO), "errors" [{"message", "count"}]}
nlohmann::ordered_json to_json(const RunSummary& s);

}  // namespace pagoda::loadgen
