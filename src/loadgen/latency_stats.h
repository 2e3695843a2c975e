// Summary statistics of a latency sample: mean, median, p95 and p99. Percentiles interpolate linearly between
// the two nearest ranks (numpy's default), so small samples give smooth, reproducible values.
#pragma once

#include <cstddef>
#include <vector>

namespace pagoda::loadgen {

struct LatencySummary {
  size_t count = 0;  // number of samples; the other fields are 0 when it is 0
  double mean = 0;
  double median = 0;
  double p95 = 0;
  double p99 = 0;
};

// The p-th percentile (p in [0, 100]) of an ascending-sorted, non-empty sample: rank p/100 * (n - 1),
// interpolated between its two neighbours.
double percentile(const std::vector<double>& sorted, double p);

// Sorts `values` and summarises them; an empty sample gives count 0.
LatencySummary summarize(std::vector<double> values);

}  // namespace pagoda::loadgen
