#include "loadgen/latency_stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace pagoda::loadgen {

double percentile(const std::vector<double>& sorted, double p) {
  assert(!sorted.empty() && p >= 0 && p <= 100);
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

LatencySummary summarize(std::vector<double> values) {
  LatencySummary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.median = percentile(values, 50);
  s.p95 = percentile(values, 95);
  s.p99 = percentile(values, 99);
  return s;
}

}  // namespace pagoda::loadgen
