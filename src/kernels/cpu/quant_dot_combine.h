// The float part of the quantized dot products: how one block's exact integer sums update the running sum.
// Shared by the portable and SIMD builds (compiled with -ffp-contract=off), so all give the same bits.
#pragma once

#include "kernels/cpu/isa_namespace.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "io/quant_blocks.h"
#include "util/fp16.h"

namespace pagoda::inline PAGODA_ISA_NAMESPACE::quant_combine {

// Sums of 4 consecutive elements per 32-element block: a Q8_0 activation row's lane sums (quant_dot.h).
constexpr int kLanes32 = 8;

// The 32-element types (block-exact): one running sum per row; block b's exact integer sum over its 32 elements
// updates it with one fused multiply-add by the block's scale d_w * d_x.
inline float block_exact_update(float acc, int32_t sum, float d_w, float d_x) {
  return std::fma(static_cast<float>(sum), d_w * d_x, acc);
}
// Q4_1 and Q5_1: the mins' running sum, mins + m_w * s_x (s_x = the activation block's d * sum of its levels, f16);
// the row's result is acc + mins.
inline float min_update(float mins, float m_w, float s_x) { return mins + m_w * s_x; }
// K-quants with mins: acc + (d_w * d_x) * sumi - (dmin_w * d_x) * summ.
inline float k_with_min(float acc, int32_t sumi, int32_t summ, float d_w, float dmin_w, float d_x) {
  return acc + (d_w * d_x) * static_cast<float>(sumi) - (dmin_w * d_x) * static_cast<float>(summ);
}
// K-quants without mins: acc + (d_w * d_x) * sumi.
inline float k_plain(float acc, int32_t sumi, float d_w, float d_x) {
  return acc + (d_w * d_x) * static_cast<float>(sumi);
}

// Q4_K / Q5_K: the 8 sub-block scales and mins of a super-block, four at a time (the values of
// unpack_k4_scale_min): bytes 0..3 and 4..7 hold scales and mins 0..3 in their low 6 bits; scales and mins 4..7
// take their low 4 bits from the nibbles of bytes 8..11 and their top 2 bits from bits 6..7 of bytes 0..3 / 4..7.
inline void k4_scales(const uint8_t* packed, uint8_t sc[8], uint8_t m[8]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const uint32_t sc_lo = a & 0x3f3f3f3fu, m_lo = b & 0x3f3f3f3fu;
  const uint32_t sc_hi = (c & 0x0f0f0f0fu) | (((a >> 6) & 0x03030303u) << 4);
  const uint32_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | (((b >> 6) & 0x03030303u) << 4);
  std::memcpy(sc, &sc_lo, 4);
  std::memcpy(sc + 4, &sc_hi, 4);
  std::memcpy(m, &m_lo, 4);
  std::memcpy(m + 4, &m_hi, 4);
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
