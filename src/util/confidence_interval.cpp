#include "util/confidence_interval.h"

#include <algorithm>
#include <cmath>

namespace pagoda {

namespace {
constexpr double kZ = 1.959963984540054;  // the 97.5% point of the standard normal
}

Proportion wilson_proportion(int32_t hits, int32_t n) {
  Proportion p;
  p.hits = hits;
  p.n = n;
  if (n <= 0) return p;
  const double phat = static_cast<double>(hits) / n, z2 = kZ * kZ, nn = n;
  const double centre = (phat + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = kZ * std::sqrt(phat * (1 - phat) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
  p.rate = phat;
  p.low = std::max(0.0, centre - half);
  p.high = std::min(1.0, centre + half);
  return p;
}

MeanInterval mean_interval(const std::vector<double>& values) {
  MeanInterval m;
  m.n = static_cast<int32_t>(values.size());
  if (values.empty()) return m;
  double sum = 0;
  for (double v : values) sum += v;
  m.mean = sum / m.n;
  double ss = 0;
  for (double v : values) ss += (v - m.mean) * (v - m.mean);
  const double sd = m.n > 1 ? std::sqrt(ss / (m.n - 1)) : 0;
  const double half = kZ * sd / std::sqrt(static_cast<double>(m.n));
  m.low = m.mean - half;
  m.high = m.mean + half;
  return m;
}

PairedDifference paired_difference(const std::vector<bool>& a, const std::vector<bool>& b) {
  PairedDifference d;
  const size_t n = std::min(a.size(), b.size());
  d.n = static_cast<int32_t>(n);
  if (n == 0) return d;
  double both = 0, only_a = 0, only_b = 0, neither = 0;
  for (size_t i = 0; i < n; ++i) {
    if (a[i] && b[i]) ++both;
    else if (a[i]) ++only_a;
    else if (b[i]) ++only_b;
    else ++neither;
  }
  d.only_a = static_cast<int32_t>(only_a);
  d.only_b = static_cast<int32_t>(only_b);
  const Proportion pa = wilson_proportion(static_cast<int32_t>(both + only_a), d.n);
  const Proportion pb = wilson_proportion(static_cast<int32_t>(both + only_b), d.n);
  const double denominator = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither);
  const double phi = denominator > 0 ? (both * neither - only_a * only_b) / std::sqrt(denominator) : 0.0;
  const double la = pa.rate - pa.low, ua = pa.high - pa.rate, lb = pb.rate - pb.low, ub = pb.high - pb.rate;
  const double delta = std::sqrt(std::max(0.0, la * la - 2 * phi * la * ub + ub * ub));
  const double epsilon = std::sqrt(std::max(0.0, ua * ua - 2 * phi * ua * lb + lb * lb));
  d.difference = pa.rate - pb.rate;
  d.low = std::max(-1.0, d.difference - delta);
  d.high = std::min(1.0, d.difference + epsilon);
  return d;
}

}  // namespace pagoda
