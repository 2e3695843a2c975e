// Dot product with a fixed reduction order shared by the attention kernels: 16 interleaved partial sums, then
// their sum in index order. Vectorisable, and the same bits wherever it is called from.
#pragma once

#include <cstdint>

namespace pagoda {

inline float dot_f32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 16;
  float lanes[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += a[d + l] * b[d + l];
  for (; d < n; ++d) lanes[d % kLanes] += a[d] * b[d];
  float sum = 0.0f;
  for (float l : lanes) sum += l;
  return sum;
}

}  // namespace pagoda
