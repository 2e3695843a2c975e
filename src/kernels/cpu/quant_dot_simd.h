// The SIMD integer dot products, generic over how bytes are multiplied and summed (Ops): AVX2 with
// maddubs/madd, or AVX-512 VNNI (dpbusd/dpwssd on 256-bit vectors). Include only from a file compiled for that
// ISA. Every product and sum here is an exact integer (the operand ranges keep maddubs below saturation: unsigned
// <= 128 times signed <= 127, pairs <= 32512), and each block's float update is quant_combine's, so the results
// are bitwise those of the portable code (quant_dot.cpp).
//
// Ops provides:
//   static __m256i dot4(__m256i acc, __m256i u8, __m256i s8);    // acc + sums of 4 adjacent u8 * s8 products
//   static __m256i madd16(__m256i acc, __m256i a16, __m256i b16); // acc + sums of 2 adjacent int16 products
#pragma once

#include <immintrin.h>

#include "io/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_combine.h"

namespace pagoda::quant_simd {

using namespace quant_combine;

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 bytes of packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high nibbles (16..31).
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

template <class Ops>
float dot_q8_0(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_0*>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b) {
    const __m256i wq = load32(w[b].qs), xq = load32(x[b].qs);
    // sum w * x = sum |w| * (x * sign(w)); |w| <= 128 as unsigned, |x| <= 127.
    const __m256i p = Ops::dot4(_mm256_setzero_si256(), _mm256_abs_epi8(wq), _mm256_sign_epi8(xq, wq));
    acc = scaled(acc, hsum(p), f16_to_f32(w[b].d), f16_to_f32(x[b].d));
  }
  return acc;
}

template <class Ops>
float dot_q4_0(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockQ4_0*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_0*>(xr);
  const __m256i ones = _mm256_set1_epi8(1);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b) {
    const __m256i q = unpack_nibbles(w[b].qs), xq = load32(x[b].qs);
    // sum (q - 8) x = sum q x - 8 sum x
    const __m256i qx = Ops::dot4(_mm256_setzero_si256(), q, xq);
    const __m256i sx = Ops::dot4(_mm256_setzero_si256(), ones, xq);
    acc = scaled(acc, hsum(_mm256_sub_epi32(qx, _mm256_slli_epi32(sx, 3))), f16_to_f32(w[b].d), f16_to_f32(x[b].d));
  }
  return acc;
}

template <class Ops>
float dot_q4_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockQ4_K*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(xr);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    uint8_t sc[8], m[8];
    k4_scales(w[b].scales, sc, m);
    __m256i sum = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {  // 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the high ones
      const __m256i bytes = load32(w[b].qs + 32 * c);
      const __m256i lo = _mm256_and_si256(bytes, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load32(x[b].qs + 64 * c));  // pairs <= 2 * 15 * 127
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load32(x[b].qs + 64 * c + 32));
      sum = Ops::madd16(sum, p_lo, _mm256_set1_epi16(sc[2 * c]));
      sum = Ops::madd16(sum, p_hi, _mm256_set1_epi16(sc[2 * c + 1]));
    }
    acc = k_with_min(acc, hsum(sum), k4_min_sum(m, x[b].bsums), f16_to_f32(w[b].d), f16_to_f32(w[b].dmin), x[b].d);
  }
  return acc;
}

template <class Ops>
float dot_q6_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockQ6_K*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(xr);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    __m256i sum = _mm256_setzero_si256();
    int32_t offset = 0;  // sum over groups of sc * 32 * bsum: the -32 of every level
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load32(w[b].ql + 64 * h), ql1 = load32(w[b].ql + 64 * h + 32);
      const __m256i qh = load32(w[b].qh + 32 * h);
      for (int f = 0; f < 4; ++f) {
        const __m256i ql = (f & 1) ? ql1 : ql0;
        const __m256i low = _mm256_and_si256(f >> 1 ? _mm256_srli_epi16(ql, 4) : ql, m4);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * f), m2);
        const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));  // 0..63
        const __m256i p = _mm256_maddubs_epi16(q, load32(x[b].qs + 128 * h + 32 * f));  // pairs <= 2 * 63 * 127
        const int8_t s0 = w[b].scales[8 * h + 2 * f], s1 = w[b].scales[8 * h + 2 * f + 1];
        sum = Ops::madd16(sum, p, _mm256_set_m128i(_mm_set1_epi16(s1), _mm_set1_epi16(s0)));
        offset += s0 * x[b].bsums[8 * h + 2 * f] + s1 * x[b].bsums[8 * h + 2 * f + 1];
      }
    }
    acc = k_plain(acc, hsum(sum) - 32 * offset, f16_to_f32(w[b].d), x[b].d);
  }
  return acc;
}

template <class Ops>
QuantDotFn dot_for(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return dot_q8_0<Ops>;
    case GgmlType::Q4_0: return dot_q4_0<Ops>;
    case GgmlType::Q4_K: return dot_q4_k<Ops>;
    case GgmlType::Q6_K: return dot_q6_k<Ops>;
    default: return nullptr;
  }
}

}  // namespace pagoda::quant_simd
