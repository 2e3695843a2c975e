// The Q4_K prefill tile on 512-bit vectors (AVX-512 VNNI): two 32-byte chunks of nibbles per zmm. Include only
// from quant_dot_avx512.cpp.
#pragma once

#include "kernels/cpu/isa_namespace.h"

#include <immintrin.h>

#include "kernels/cpu/quant_dot_simd.h"

namespace pagoda::inline PAGODA_ISA_NAMESPACE::quant_zmm {

using quant_simd::five_bit_levels;
using quant_simd::half;
using quant_simd::load32;

// Two 256-bit halves -> one zmm.
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }


// Q4_K against Q8_K, kRows x kTokens: two 32-byte chunks of nibbles (sub-blocks 2c, 2c + 1 and 2c + 2, 2c + 3) per
// zmm. The per-super-block integer sums are exact, so summing them over 512-bit lanes gives the 256-bit code's
// integers, and the float update is the same k_with_min.
template <int kRows, int kTokens>
void tile_q4_k(const uint8_t* w0, size_t w_stride, const uint8_t* x0, size_t x_stride, int64_t K, float* y,
               int64_t y_stride) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  float acc[kRows][kTokens] = {};
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    const BlockQ4_K* w[kRows];
    const BlockQ8_K* x[kTokens];
    for (int r = 0; r < kRows; ++r) w[r] = reinterpret_cast<const BlockQ4_K*>(w0 + r * w_stride) + b;
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    uint8_t sc[kRows][8], mins[kRows][8];
    __m128i mins16[kRows];
    for (int r = 0; r < kRows; ++r) {
      quant_combine::k4_scales(w[r]->scales, sc[r], mins[r]);
      mins16[r] = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mins[r])));
    }
    __m512i sum[kRows][kTokens];
    for (int r = 0; r < kRows; ++r)
      for (int t = 0; t < kTokens; ++t) sum[r][t] = _mm512_setzero_si512();
    for (int c = 0; c < 4; c += 2) {  // chunks c and c + 1: 64 bytes of nibbles
      __m512i lo[kRows], hi[kRows], s_lo[kRows], s_hi[kRows];
      for (int r = 0; r < kRows; ++r) {
        const __m512i bytes = _mm512_loadu_si512(w[r]->qs + 32 * c);
        lo[r] = _mm512_and_si512(bytes, m4);
        hi[r] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), m4);
        s_lo[r] = join(_mm256_set1_epi16(sc[r][2 * c]), _mm256_set1_epi16(sc[r][2 * c + 2]));
        s_hi[r] = join(_mm256_set1_epi16(sc[r][2 * c + 1]), _mm256_set1_epi16(sc[r][2 * c + 3]));
      }
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* q = x[t]->qs + 64 * c;
        const __m512i x_lo = join(load32(q), load32(q + 64)), x_hi = join(load32(q + 32), load32(q + 96));
        for (int r = 0; r < kRows; ++r) {  // maddubs pairs <= 2 * 15 * 127
          sum[r][t] = _mm512_dpwssd_epi32(sum[r][t], _mm512_maddubs_epi16(lo[r], x_lo), s_lo[r]);
          sum[r][t] = _mm512_dpwssd_epi32(sum[r][t], _mm512_maddubs_epi16(hi[r], x_hi), s_hi[r]);
        }
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums)),
                                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums + 8)));
      for (int r = 0; r < kRows; ++r) {
        const int32_t summ = quant_simd::hsum4(_mm_madd_epi16(mins16[r], pairs));
        const int32_t sumi = _mm512_reduce_add_epi32(sum[r][t]);
        acc[r][t] = quant_combine::k_with_min(acc[r][t], sumi, summ, half(w[r]->d), half(w[r]->dmin), x[t]->d);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) y[t * y_stride + r] = acc[r][t];
}

}  // namespace pagoda::quant_zmm
