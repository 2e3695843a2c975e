// 95% confidence intervals for the benchmarks' reported shares and means (anchor memory, warm-start quality).
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda {

// A share with its 95% Wilson score interval.
struct Proportion {
  int32_t hits = 0, n = 0;
  double rate = 0, low = 0, high = 0;
};
Proportion wilson_proportion(int32_t hits, int32_t n);

// A mean with its 95% normal-approximation interval (mean +/- 1.96 sd / sqrt(n)).
struct MeanInterval {
  int32_t n = 0;
  double mean = 0, low = 0, high = 0;
};
MeanInterval mean_interval(const std::vector<double>& values);

// The difference of two paired shares, p_a - p_b, where each of n items is scored by both a and b (e.g. cold and a
// warm method on the same requests), with Newcombe's hybrid score interval for paired data (1998, method 10: Wilson
// intervals of both shares combined through the phi correlation of the 2x2 table). Unlike a normal interval on the
// per-item differences, it stays wide when no item differs and n is small.
struct PairedDifference {
  int32_t n = 0;
  int32_t only_a = 0, only_b = 0;  // discordant items: right under a only, under b only
  double difference = 0, low = 0, high = 0;
};
PairedDifference paired_difference(const std::vector<bool>& a, const std::vector<bool>& b);

}  // namespace pagoda
