// The float part of the quantized dot products: how one block's exact integer sums update the running sum.
// Shared by the portable and SIMD builds (compiled with -ffp-contract=off), so all give the same bits.
#pragma once

#include <cstdint>

#include "io/quant_blocks.h"
#include "util/fp16.h"

namespace pagoda::quant_combine {

// The 32-element types keep 8 float lanes: lane j sums, over the blocks in order, the integer partial sum of the
// block's elements 4j .. 4j + 3 times the block's scale d_w * d_x, with one fused multiply-add:
//   lane[j] = fma(float(partial[j]), d_w * d_x, lane[j]).
// The row's result is reduce8(lane) (+ the mins' sum for Q4_1 / Q5_1: sum over blocks of m_w * s_x, in order).
constexpr int kLanes32 = 8;

// u[i] = l[i] + l[i + 4]; v[i] = u[i] + u[i + 2]; result v[0] + v[1].
inline float reduce8(const float l[kLanes32]) {
  const float u0 = l[0] + l[4], u1 = l[1] + l[5], u2 = l[2] + l[6], u3 = l[3] + l[7];
  return (u0 + u2) + (u1 + u3);
}
// K-quants with mins: acc + (d_w * d_x) * sumi - (dmin_w * d_x) * summ.
inline float k_with_min(float acc, int32_t sumi, int32_t summ, float d_w, float dmin_w, float d_x) {
  return acc + (d_w * d_x) * static_cast<float>(sumi) - (dmin_w * d_x) * static_cast<float>(summ);
}
// K-quants without mins: acc + (d_w * d_x) * sumi.
inline float k_plain(float acc, int32_t sumi, float d_w, float d_x) {
  return acc + (d_w * d_x) * static_cast<float>(sumi);
}

// Q4_K / Q5_K: the 8 sub-block scales and mins of a super-block.
inline void k4_scales(const uint8_t* packed, uint8_t sc[8], uint8_t m[8]) {
  for (int j = 0; j < 8; ++j) unpack_k4_scale_min(packed, j, &sc[j], &m[j]);
}
// sum_j m_j * (bsums[2j] + bsums[2j + 1]): the mins' share, exact.
inline int32_t k4_min_sum(const uint8_t m[8], const int16_t* bsums) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) s += m[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return s;
}
// IQ4_XS: the signed 6-bit scale of sub-block j.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

}  // namespace pagoda::quant_combine
