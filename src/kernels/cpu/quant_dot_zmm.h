// Q5_0's tiles on 512-bit vectors, and the Q4_K prefill tile (AVX-512 VNNI): one zmm holds a pair of blocks, so the even
// blocks' set of 8 float lanes and the odd blocks' set (quant_dot_combine.h) are its two halves, and one dpbusd,
// one conversion, one multiply and one fused multiply-add update a (row, token) pair for two blocks. The integers
// and float operations per lane are those of the portable code, so the bits are too. Include only from
// quant_dot_avx512.cpp.
#pragma once

#include <immintrin.h>

#include "kernels/cpu/quant_dot_simd.h"

namespace pagoda::quant_zmm {

using quant_simd::five_bit_levels;
using quant_simd::half;
using quant_simd::load32;

// Two 256-bit halves -> one zmm (the high half zero when `two` is false: a lone last block).
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m512 join_scales(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

// How a pair of weight blocks becomes the unsigned bytes of dpbusd, and what the token's lane sums seed the
// accumulator with: Q5_0 levels q - 16 go in as q (seed -16 * lane sums). (Q8_0, Q4_0 and IQ4_NL run packed:
// quant_dot_packed_avx512.cpp.)
struct OffsetQ5_0 {
  using Block = BlockQ5_0;
  static constexpr int kSeedShift = 4;
  static __m256i levels(const Block& b) { return five_bit_levels(b.qs, b.qh); }
};

// A pair of blocks' levels: the Kind's own pair loader where it has one, else two halves.
template <class Kind>
__m512i levels_pair(const typename Kind::Block& b0, const typename Kind::Block& b1) {
  if constexpr (requires { Kind::levels_pair(b0, b1); })
    return Kind::levels_pair(b0, b1);
  else
    return join(Kind::levels(b0), Kind::levels(b1));
}

// The 32 bytes at p, then the 32 at q (two), or zeros (a lone last block).
inline __m512i load_pair(const void* p, const void* q, bool two) {
  return two ? join(load32(p), load32(q)) : _mm512_zextsi256_si512(load32(p));
}

template <class Kind, int kRows, int kTokens>
void tile32(const uint8_t* w0, size_t w_stride, const uint8_t* x0, size_t x_stride, int64_t K, float* y,
            int64_t y_stride) {
  using Block = typename Kind::Block;
  const int64_t nb = K / kQK;
  __m512 acc[kRows][kTokens];
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b += 2) {
    const bool two = b + 1 < nb;
    const __mmask16 lanes = two ? 0xFFFF : 0x00FF;  // a lone last block updates the even set only
    __m512i w[kRows];
    __m512 dw[kRows];
    for (int r = 0; r < kRows; ++r) {
      const Block* blk = reinterpret_cast<const Block*>(w0 + r * w_stride) + b;
      w[r] = two ? levels_pair<Kind>(blk[0], blk[1]) : _mm512_zextsi256_si512(Kind::levels(blk[0]));
      dw[r] = join_scales(half(blk[0].d), two ? half(blk[1].d) : 0.0f);
    }
    for (int t = 0; t < kTokens; ++t) {
      const uint8_t* row = x0 + t * x_stride;
      const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(row) + b;
      const uint8_t* lane_sums = row + nb * sizeof(BlockQ8_0) + b * 32;  // blocks b and b + 1 are adjacent
      const __m512i xq = load_pair(xb[0].qs, two ? xb[1].qs : nullptr, two);
      const __m512i sums = two ? _mm512_loadu_si512(lane_sums) : _mm512_zextsi256_si512(load32(lane_sums));
      const __m512i seed = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, Kind::kSeedShift));
      const __m512 dx = join_scales(half(xb[0].d), two ? half(xb[1].d) : 0.0f);
      for (int r = 0; r < kRows; ++r)
        acc[r][t] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(seed, w[r], xq)),
                                          _mm512_mul_ps(dw[r], dx), acc[r][t], lanes);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) {
      const __m256 even = _mm512_castps512_ps256(acc[r][t]), odd = _mm512_extractf32x8_ps(acc[r][t], 1);
      y[t * y_stride + r] = quant_simd::reduce_sets(even, odd);
    }
}

// Decode: the activation side of every block pair (levels, the Kind's seed, the scales) laid out once per token as
// three zmm per pair, [pairs][3][64 bytes], so a dot against many weight rows only loads it.
inline size_t prepared_bytes(int64_t K) { return static_cast<size_t>((K / kQK + 1) / 2) * 3 * 64; }

template <class Kind>
void prepare(const uint8_t* row, int64_t K, uint8_t* out) {
  const int64_t nb = K / kQK;
  const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(row);
  const uint8_t* lane_sums = row + nb * sizeof(BlockQ8_0);
  __m512i* p = reinterpret_cast<__m512i*>(out);
  for (int64_t b = 0; b < nb; b += 2, p += 3) {
    const bool two = b + 1 < nb;
    const __m512i sums = two ? _mm512_loadu_si512(lane_sums + b * 32) : _mm512_zextsi256_si512(load32(lane_sums + b * 32));
    _mm512_store_si512(p, load_pair(xb[b].qs, two ? xb[b + 1].qs : nullptr, two));
    _mm512_store_si512(p + 1, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, Kind::kSeedShift)));
    _mm512_store_ps(reinterpret_cast<float*>(p + 2), join_scales(half(xb[b].d), two ? half(xb[b + 1].d) : 0.0f));
  }
}

template <class Kind>
float dot_prepared(const uint8_t* w0, const uint8_t* prepared, int64_t K) {
  using Block = typename Kind::Block;
  const int64_t nb = K / kQK;
  const Block* blk = reinterpret_cast<const Block*>(w0);
  const __m512i* p = reinterpret_cast<const __m512i*>(prepared);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; b += 2, p += 3) {
    const bool two = b + 1 < nb;
    const __m512i w = two ? levels_pair<Kind>(blk[b], blk[b + 1]) : _mm512_zextsi256_si512(Kind::levels(blk[b]));
    const __m512 dw = join_scales(half(blk[b].d), two ? half(blk[b + 1].d) : 0.0f);
    const __m512 dx = _mm512_load_ps(reinterpret_cast<const float*>(p + 2));
    acc = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_load_si512(p + 1), w, _mm512_load_si512(p))),
                                _mm512_mul_ps(dw, dx), acc, two ? 0xFFFF : 0x00FF);
  }
  return quant_simd::reduce_sets(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
}

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

template <class Kind>
float dot32(const uint8_t* w, const uint8_t* x, int64_t K) {
  float y;
  tile32<Kind, 1, 1>(w, 0, x, 0, K, &y, 1);
  return y;
}

}  // namespace pagoda::quant_zmm
