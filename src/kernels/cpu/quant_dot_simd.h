// The SIMD integer dot products, generic over how bytes are multiplied and summed (Ops): AVX2 with
// maddubs/madd, or AVX-512 VNNI (dpbusd/dpwssd on 256-bit vectors). Include only from a file compiled for that
// ISA. Every product and sum here is an exact integer (the operand ranges keep maddubs below saturation: unsigned
// <= 128 times signed <= 127, pairs <= 32512), and each block's float update is quant_combine's, so the results
// are bitwise those of the portable code (quant_dot.cpp).
//
// Ops provides:
//   static __m256i dot4(__m256i acc, __m256i u8, __m256i s8);    // acc + sums of 4 adjacent u8 * s8 products
//   static __m256i madd16(__m256i acc, __m256i a16, __m256i b16); // acc + sums of 2 adjacent int16 products
//   static constexpr bool kUnsignedOffset;  // dot4 never saturates (VNNI): signed weights may go in as v + 128
#pragma once

#include "kernels/cpu/isa_namespace.h"

#include <immintrin.h>

#include <cstring>

#include "io/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_combine.h"
#include "util/fp16.h"

namespace pagoda::inline PAGODA_ISA_NAMESPACE::quant_simd {

using namespace quant_combine;

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// f16 -> f32 in hardware (F16C); exact, so the same value as the portable conversion.
inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 16 bytes of packed nibbles -> 32 bytes: low nibbles (elements 0..15), then high nibbles (16..31).
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

// Bit j of `bits` -> byte j: 0xFF where set, 0 where clear.
inline __m256i bits_to_bytes(uint32_t bits) {
  // Byte j takes byte j / 8 of the word, then keeps only its bit j % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(bits)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// Levels 0..31 of a Q5_0 / Q5_1 block: the nibbles with bit 4 from qh.
inline __m256i five_bit_levels(const uint8_t* qs, const uint8_t* qh) {
  return _mm256_or_si256(unpack_nibbles(qs), _mm256_and_si256(bits_to_bytes(load_u32(qh)), _mm256_set1_epi8(0x10)));
}

// The IQ4 levels (-127..113) of 32 nibbles, by table lookup.
inline __m256i iq4_levels(const uint8_t* qs) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
  return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), unpack_nibbles(qs));
}

// Q8_0, Q4_0, Q5_0, IQ4_NL against Q8_0 activations. A Kind says how a weight block becomes registers (prep), what
// an activation block contributes once for all rows (token), and how a pair gives the block's int32 partials.
// Signed weight levels v against signed activations x. With VNNI (Ops::kUnsignedOffset): sum (v + 128) x - 128 sum x,
// the token's -128 sum x seeding the accumulator, so a pair costs one dpbusd. With maddubs (which saturates above
// 32767, so v + 128 <= 255 will not do): sum |v| * (x * sign(v)), |v| <= 128 as unsigned, |x| <= 127.
template <class Ops>
struct SignedLevels {
  struct W {
    __m256i a, b;  // VNNI: v + 128 (as u8), unused; maddubs: |v|, v
  };
  static W from_levels(__m256i v) {
    if constexpr (Ops::kUnsignedOffset)
      return {_mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))), v};
    else
      return {_mm256_abs_epi8(v), v};
  }
  static __m256i token(__m256i lane_sums) {
    if constexpr (Ops::kUnsignedOffset)
      return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(lane_sums, 7));
    else
      return _mm256_setzero_si256();
  }
  static __m256i partials(const W& w, __m256i xq, __m256i t) {
    if constexpr (Ops::kUnsignedOffset)
      return Ops::dot4(t, w.a, xq);
    else
      return Ops::dot4(t, w.a, _mm256_sign_epi8(xq, w.b));
  }
};

template <class Ops>
struct KindQ8_0 : SignedLevels<Ops> {
  using Block = BlockQ8_0;
  static typename SignedLevels<Ops>::W prep(const Block& b) { return SignedLevels<Ops>::from_levels(load32(b.qs)); }
};

template <class Ops>
struct KindIQ4_NL : SignedLevels<Ops> {  // signed table levels
  using Block = BlockIQ4_NL;
  static typename SignedLevels<Ops>::W prep(const Block& b) { return SignedLevels<Ops>::from_levels(iq4_levels(b.qs)); }
};

// Levels q - 2^kShift with q unsigned: sum q x - 2^kShift sum x, lane by lane (Q4_0: 3, Q5_0: 4); the token's
// -2^kShift sum x seeds the accumulator.
template <class Ops, class BlockT, int kShift>
struct KindOffset {
  using Block = BlockT;
  struct W {
    __m256i q;
  };
  static W prep(const Block& b) {
    if constexpr (kShift == 4)
      return {five_bit_levels(b.qs, b.qh)};
    else
      return {unpack_nibbles(b.qs)};
  }
  static __m256i token(__m256i lane_sums) {
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(lane_sums, kShift));
  }
  static __m256i partials(const W& w, __m256i xq, __m256i t) { return Ops::dot4(t, w.q, xq); }
};

// The block-exact types (Q8_0, Q4_0, Q5_0, IQ4_NL) row by row: each block's partials summed to its exact integer, then
// block_exact_update. (matmul runs them packed, quant_dot_packed.h; this is for rows outside a packed matrix.)
template <class Kind>
float dot32_exact(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  using Block = typename Kind::Block;
  const int64_t nb = K / kQK;
  const Block* w = reinterpret_cast<const Block*>(wr);
  const BlockQ8_0* x = reinterpret_cast<const BlockQ8_0*>(xr);
  const uint8_t* lane_sums = xr + nb * sizeof(BlockQ8_0);
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i partials = Kind::partials(Kind::prep(w[b]), load32(x[b].qs), Kind::token(load32(lane_sums + b * 32)));
    acc = block_exact_update(acc, hsum(partials), half(w[b].d), half(x[b].d));
  }
  return acc;
}

template <class Ops>
float dot_q8_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot32_exact<KindQ8_0<Ops>>(w, x, K);
}
template <class Ops>
float dot_q4_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot32_exact<KindOffset<Ops, BlockQ4_0, 3>>(w, x, K);
}
template <class Ops>
float dot_q5_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot32_exact<KindOffset<Ops, BlockQ5_0, 4>>(w, x, K);
}
template <class Ops>
float dot_iq4_nl(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot32_exact<KindIQ4_NL<Ops>>(w, x, K);
}

// Q4_1 / Q5_1 against Q8_1, block-exact: each block's exact sum of q x, block_exact_update, and min_update beside.
template <class Ops, class Block, bool kFiveBits>
float dot_with_min(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const Block*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_1*>(xr);
  float acc = 0.0f, mins = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b) {
    __m256i q;
    if constexpr (kFiveBits)
      q = five_bit_levels(w[b].qs, w[b].qh);
    else
      q = unpack_nibbles(w[b].qs);
    acc = block_exact_update(acc, hsum(Ops::dot4(_mm256_setzero_si256(), q, load32(x[b].qs))), half(w[b].d), half(x[b].d));
    mins = min_update(mins, half(w[b].m), half(x[b].s));
  }
  return acc + mins;
}

template <class Ops>
float dot_iq4_xs(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockIQ4_XS*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    __m256i sum = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i v = iq4_levels(w[b].qs + 16 * j), xq = load32(x[b].qs + 32 * j);
      const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(xq, v));  // pairs <= 2 * 127 * 127
      sum = Ops::madd16(sum, p, _mm256_set1_epi16(static_cast<int16_t>(iq4_xs_scale(w[b], j))));
    }
    acc = k_plain(acc, hsum(sum), half(w[b].d), x[b].d);
  }
  return acc;
}

inline int32_t hsum4(__m128i s) {
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Q4_K, and Q5_K with the fifth bit of sub-block j's element l at bit j of qh[l]: kRows x kTokens dots at once
// (y[t * y_stride + r]); every pair's integers and float updates are those of the 1 x 1 tile (the single dot).
template <class Ops, class Block, bool kFiveBits, int kRows, int kTokens>
void tile_q45_k(const uint8_t* w0, size_t w_stride, const uint8_t* x0, size_t x_stride, int64_t K, float* y,
                int64_t y_stride) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  float acc[kRows][kTokens] = {};
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    const Block* w[kRows];
    const BlockQ8_K* x[kTokens];
    for (int r = 0; r < kRows; ++r) w[r] = reinterpret_cast<const Block*>(w0 + r * w_stride) + b;
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    uint8_t sc[kRows][8], mins[kRows][8];
    __m256i qh[kRows];
    __m128i mins16[kRows];
    for (int r = 0; r < kRows; ++r) {
      k4_scales(w[r]->scales, sc[r], mins[r]);
      mins16[r] = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mins[r])));
      if constexpr (kFiveBits) qh[r] = load32(w[r]->qh);
    }
    __m256i sum[kRows][kTokens];
    for (int r = 0; r < kRows; ++r)
      for (int t = 0; t < kTokens; ++t) sum[r][t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {  // 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the high ones
      __m256i lo[kRows], hi[kRows], s_lo[kRows], s_hi[kRows];
      for (int r = 0; r < kRows; ++r) {
        const __m256i bytes = load32(w[r]->qs + 32 * c);
        lo[r] = _mm256_and_si256(bytes, m4);
        hi[r] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
        if constexpr (kFiveBits) {
          lo[r] = _mm256_or_si256(lo[r], _mm256_slli_epi16(_mm256_and_si256(qh[r], one), 4));
          hi[r] = _mm256_or_si256(hi[r], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh[r], 1), one), 4));
          qh[r] = _mm256_srli_epi16(qh[r], 2);
        }
        s_lo[r] = _mm256_set1_epi16(sc[r][2 * c]);
        s_hi[r] = _mm256_set1_epi16(sc[r][2 * c + 1]);
      }
      for (int t = 0; t < kTokens; ++t) {
        const __m256i x_lo = load32(x[t]->qs + 64 * c), x_hi = load32(x[t]->qs + 64 * c + 32);
        for (int r = 0; r < kRows; ++r) {  // maddubs pairs <= 2 * 31 * 127
          sum[r][t] = Ops::madd16(sum[r][t], _mm256_maddubs_epi16(lo[r], x_lo), s_lo[r]);
          sum[r][t] = Ops::madd16(sum[r][t], _mm256_maddubs_epi16(hi[r], x_hi), s_hi[r]);
        }
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      // bsums[2j] + bsums[2j + 1] for j < 8 (each <= 4064: int16), then sum_j m_j * that.
      const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums)),
                                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums + 8)));
      for (int r = 0; r < kRows; ++r) {
        const int32_t summ = hsum4(_mm_madd_epi16(mins16[r], pairs));
        acc[r][t] = k_with_min(acc[r][t], hsum(sum[r][t]), summ, half(w[r]->d), half(w[r]->dmin), x[t]->d);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) y[t * y_stride + r] = acc[r][t];
}

template <class Ops, int kRows, int kTokens>
void tile_q6_k(const uint8_t* w0, size_t w_stride, const uint8_t* x0, size_t x_stride, int64_t K, float* y,
               int64_t y_stride) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  float acc[kRows][kTokens] = {};
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    const BlockQ6_K* w[kRows];
    const BlockQ8_K* x[kTokens];
    for (int r = 0; r < kRows; ++r) w[r] = reinterpret_cast<const BlockQ6_K*>(w0 + r * w_stride) + b;
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    __m256i sum[kRows][kTokens];
    for (int r = 0; r < kRows; ++r)
      for (int t = 0; t < kTokens; ++t) sum[r][t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h)
      for (int f = 0; f < 4; ++f) {
        __m256i q[kRows], scales[kRows];
        for (int r = 0; r < kRows; ++r) {
          const __m256i ql = load32(w[r]->ql + 64 * h + 32 * (f & 1));
          const __m256i low = _mm256_and_si256(f >> 1 ? _mm256_srli_epi16(ql, 4) : ql, m4);
          const __m256i high = _mm256_and_si256(_mm256_srli_epi16(load32(w[r]->qh + 32 * h), 2 * f), m2);
          q[r] = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));  // 0..63
          scales[r] = _mm256_set_m128i(_mm_set1_epi16(w[r]->scales[8 * h + 2 * f + 1]),
                                       _mm_set1_epi16(w[r]->scales[8 * h + 2 * f]));
        }
        for (int t = 0; t < kTokens; ++t) {
          const __m256i xv = load32(x[t]->qs + 128 * h + 32 * f);
          for (int r = 0; r < kRows; ++r)  // maddubs pairs <= 2 * 63 * 127
            sum[r][t] = Ops::madd16(sum[r][t], _mm256_maddubs_epi16(q[r], xv), scales[r]);
        }
      }
    __m256i sc16[kRows];  // the 16 group scales as int16
    for (int r = 0; r < kRows; ++r)
      sc16[r] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[r]->scales)));
    for (int t = 0; t < kTokens; ++t) {
      const __m256i bsums = load32(x[t]->bsums);
      for (int r = 0; r < kRows; ++r) {
        // sum over groups of sc * bsum: the levels' -32 times 32
        const int32_t offset = hsum(_mm256_madd_epi16(sc16[r], bsums));
        acc[r][t] = k_plain(acc[r][t], hsum(sum[r][t]) - 32 * offset, half(w[r]->d), x[t]->d);
      }
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int t = 0; t < kTokens; ++t) y[t * y_stride + r] = acc[r][t];
}

template <class Ops, class Block, bool kFiveBits>
float dot_q45_k(const uint8_t* w, const uint8_t* x, int64_t K) {
  float y;
  tile_q45_k<Ops, Block, kFiveBits, 1, 1>(w, 0, x, 0, K, &y, 1);
  return y;
}

template <class Ops>
float dot_q6_k(const uint8_t* w, const uint8_t* x, int64_t K) {
  float y;
  tile_q6_k<Ops, 1, 1>(w, 0, x, 0, K, &y, 1);
  return y;
}

// Q2_K: 2-bit levels with a 4-bit scale and a 4-bit min per group of 16.
template <class Ops>
float dot_q2_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockQ2_K*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(xr);
  const __m256i m2 = _mm256_set1_epi8(0x03);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    __m256i sum = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bytes = load32(w[b].qs + 32 * h);
      for (int f = 0; f < 4; ++f) {  // elements 128h + 32f .. + 31: groups 8h + 2f (first 16) and + 1
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bytes, 2 * f), m2);
        const __m256i p = _mm256_maddubs_epi16(q, load32(x[b].qs + 128 * h + 32 * f));  // pairs <= 2 * 3 * 127
        const int g = 8 * h + 2 * f;
        sum = Ops::madd16(sum, p, _mm256_set_m128i(_mm_set1_epi16(w[b].scales[g + 1] & 0xF),
                                                   _mm_set1_epi16(w[b].scales[g] & 0xF)));
      }
    }
    // sum_g min_g * bsum_g
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_srli_epi16(
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].scales)), _mm_set1_epi8(static_cast<char>(0xF0))), 4));
    const int32_t summ = hsum(_mm256_madd_epi16(mins, load32(x[b].bsums)));
    acc = k_with_min(acc, hsum(sum), summ, half(w[b].d), half(w[b].dmin), x[b].d);
  }
  return acc;
}

// Q3_K: levels low + 4 * high - 4 (the high bit from hmask), a signed 6-bit scale per group of 16.
template <class Ops>
float dot_q3_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const BlockQ3_K*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(xr);
  const __m256i m2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    alignas(16) int8_t scales[16];
    unpack_q3_k_scales(w[b].scales, scales);
    const __m256i hmask = load32(w[b].hmask);
    __m256i sum = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i bytes = load32(w[b].qs + 32 * h);
      for (int f = 0; f < 4; ++f) {
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bytes, 2 * f), m2);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + f), one);
        const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));  // 0..7: the level + 4
        const __m256i p = _mm256_maddubs_epi16(q, load32(x[b].qs + 128 * h + 32 * f));  // pairs <= 2 * 7 * 127
        const int g = 8 * h + 2 * f;
        sum = Ops::madd16(sum, p, _mm256_set_m128i(_mm_set1_epi16(scales[g + 1]), _mm_set1_epi16(scales[g])));
      }
    }
    // The levels' -4: 4 * sum_g scale_g * bsum_g.
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(scales)));
    const int32_t offset = hsum(_mm256_madd_epi16(sc16, load32(x[b].bsums)));
    acc = k_plain(acc, hsum(sum) - 4 * offset, half(w[b].d), x[b].d);
  }
  return acc;
}

template <class Ops>
QuantDotFn dot_for(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return dot_q8_0<Ops>;
    case GgmlType::Q4_0: return dot_q4_0<Ops>;
    case GgmlType::Q5_0: return dot_q5_0<Ops>;
    case GgmlType::Q4_1: return dot_with_min<Ops, BlockQ4_1, false>;
    case GgmlType::Q5_1: return dot_with_min<Ops, BlockQ5_1, true>;
    case GgmlType::IQ4_NL: return dot_iq4_nl<Ops>;
    case GgmlType::IQ4_XS: return dot_iq4_xs<Ops>;
    case GgmlType::Q4_K: return dot_q45_k<Ops, BlockQ4_K, false>;
    case GgmlType::Q5_K: return dot_q45_k<Ops, BlockQ5_K, true>;
    case GgmlType::Q6_K: return dot_q6_k<Ops>;
    case GgmlType::Q2_K: return dot_q2_k<Ops>;
    case GgmlType::Q3_K: return dot_q3_k<Ops>;
    default: return nullptr;
  }
}

// A type's kernels: its dot, and its tile of kRows x kTokens (the super-block types use kRows / 2 rows: their
// unpacked weights take more registers).
// --- activation quantization: bitwise the portable quantize_activations (quant_dot.cpp) -----------------------

// The clamp and round of round_even (quant_dot.cpp): min(v, 127) gives 127 for NaN as fmin(127, v) does, then
// max(v, -127), then round to nearest even (exact for |v| <= 127). 32 values -> 32 int8 in order.
inline __m256i round_pack32(const float* x, __m256 scale) {
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), scale);
    v = _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
    q[i] = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // packs works within 128-bit halves: 4-byte groups come out as a0 b0 c0 d0 a1 b1 c1 d1; put them back in order.
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Lane l: max |x_i| over the values i = l (mod 8) of n (a multiple of 8); a NaN input is skipped, as
// std::max(amax, |x|) skips it.
inline __m256 abs_max_lanes(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), m);
  return m;
}

// max |x_i| over n (a multiple of 8) values, NaN skipped.
inline float abs_max(const float* x, int n) {
  const __m256 m = abs_max_lanes(x, n);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

// Sums of 4 adjacent int8 -> 8 int32.
inline __m256i sums_of_4(__m256i q) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(1));
}

// One Q8_0 block: d = max|x| / 127, q = round(x / d); returns d.
inline float quantize_block32(const float* x, int8_t* qs, __m256i* q_out) {
  const float d = abs_max(x, kQK) / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256i q = round_pack32(x, _mm256_set1_ps(id));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), q);
  *q_out = q;
  return d;
}

inline void quantize_row_q8_0(const float* x, int64_t K, uint8_t* out) {
  auto* y = reinterpret_cast<BlockQ8_0*>(out);
  const Q8_0Row row = q8_0_row(out, K);
  for (int64_t b = 0; b < K / kQK; ++b) {
    __m256i q;
    y[b].d = f32_to_f16(quantize_block32(x + b * kQK, y[b].qs, &q));
    const __m256i sums = sums_of_4(q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(row.lane_sums + b * 32), sums);
    const int32_t block_sum = hsum(sums);
    const float d = half(y[b].d);
    std::memcpy(row.block_sums + b * 4, &block_sum, 4);
    std::memcpy(row.scales + b * 4, &d, 4);
  }
}

// Lane i: the maximum (kMax) or the int32 sum (!kMax) of v[i]'s 8 lanes, for 8 vectors at once: the vectors' halves,
// then quarters, then pairs side by side by shuffles between the levels. A maximum of values without NaN and a sum
// of int32 are the same in any order, so these equal the per-block abs_max and hsum.
template <bool kMax>
inline __m256 across8(const __m256* v) {
  auto op = [](__m256 a, __m256 b) {
    if constexpr (kMax) return _mm256_max_ps(a, b);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
  };
  __m256 h[4], p[2];
  for (int i = 0; i < 4; ++i)  // [halves of 2i | of 2i+1]
    h[i] = op(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
              _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
  for (int i = 0; i < 2; ++i)  // per 128-bit half k: [pairs of 4i+k, 4i+2+k]
    p[i] = op(_mm256_shuffle_ps(h[2 * i], h[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm256_shuffle_ps(h[2 * i], h[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Per 128-bit half k: the results of k, 2+k, 4+k, 6+k; then into order.
  const __m256 r =
      op(_mm256_shuffle_ps(p[0], p[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(p[0], p[1], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Q8_1 blocks 8 at a time: the blocks' maxima, scales, reciprocals, sums and f16 conversions as vectors of 8 (the
// same IEEE operations as quantize_block32's scalars, and F16C's round-to-nearest-even conversion, which equals
// f32_to_f16 for every input, NaN included), then each block's rounding as before. Bitwise the per-block loop.
inline void quantize_8_blocks_q8_1(const float* x, BlockQ8_1* y) {
  __m256 m[8];
  for (int b = 0; b < 8; ++b) m[b] = abs_max_lanes(x + b * kQK, kQK);
  const __m256 d = _mm256_div_ps(across8<true>(m), _mm256_set1_ps(127.0f));
  const __m256 nonzero = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  const __m256 id = _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), d), nonzero);
  alignas(32) float ids[8];
  _mm256_store_ps(ids, id);
  __m256 sums[8];
  for (int b = 0; b < 8; ++b) {
    const __m256i q = round_pack32(x + b * kQK, _mm256_set1_ps(ids[b]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), q);
    sums[b] = _mm256_castsi256_ps(sums_of_4(q));
  }
  const __m256 s = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_castps_si256(across8<false>(sums))));
  alignas(16) uint16_t dh[8], sh[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(dh), _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  _mm_store_si128(reinterpret_cast<__m128i*>(sh), _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (int b = 0; b < 8; ++b) y[b].d = dh[b], y[b].s = sh[b];
}

inline void quantize_row_q8_1(const float* x, int64_t K, uint8_t* out) {
  auto* y = reinterpret_cast<BlockQ8_1*>(out);
  const int64_t blocks = K / kQK;
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8) quantize_8_blocks_q8_1(x + b * kQK, y + b);
  for (; b < blocks; ++b) {
    __m256i q;
    const float d = quantize_block32(x + b * kQK, y[b].qs, &q);
    y[b].d = f32_to_f16(d);
    y[b].s = f32_to_f16(d * static_cast<float>(hsum(sums_of_4(q))));
  }
}

inline void quantize_row_q8_k(const float* x, int64_t K, uint8_t* out) {
  auto* y = reinterpret_cast<BlockQ8_K*>(out);
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    const float* v = x + b * kQK_K;
    BlockQ8_K& blk = y[b];
    const float amax = abs_max(v, kQK_K);
    if (amax == 0.0f) {
      blk.d = 0.0f;
      std::memset(blk.qs, 0, sizeof blk.qs);
      std::memset(blk.bsums, 0, sizeof blk.bsums);
      continue;
    }
    // The first element of largest magnitude keeps its sign in d (the portable scan's strict > keeps the first).
    float max = 0.0f;
    const __m256 sign = _mm256_set1_ps(-0.0f), am = _mm256_set1_ps(amax);
    for (int i = 0; i < kQK_K; i += 8) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v + i)), am, _CMP_EQ_OQ));
      if (hit) {
        max = v[i + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    for (int g = 0; g < kQK_K / 32; ++g) {
      const __m256i q = round_pack32(v + 32 * g, _mm256_set1_ps(iscale));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(blk.qs + 32 * g), q);
      // Sums of 16: the 4-sums of each 128-bit half, added horizontally twice.
      __m256i s = sums_of_4(q);
      s = _mm256_hadd_epi32(s, s);
      s = _mm256_hadd_epi32(s, s);
      blk.bsums[2 * g] = static_cast<int16_t>(_mm256_extract_epi32(s, 0));
      blk.bsums[2 * g + 1] = static_cast<int16_t>(_mm256_extract_epi32(s, 4));
    }
    blk.d = 1.0f / iscale;
  }
}

inline ActivationQuantFn quantizer_for(GgmlType t) {
  switch (activation_format(t)) {
    case ActivationFormat::kQ8_0: return quantize_row_q8_0;
    case ActivationFormat::kQ8_1: return quantize_row_q8_1;
    case ActivationFormat::kQ8_K: return quantize_row_q8_k;
  }
  return nullptr;
}

template <class Ops, int kRows, int kTokens>
QuantKernels kernels_for(GgmlType t) {
  constexpr int kKRows = kRows / 2 > 0 ? kRows / 2 : 1;
  QuantKernels k;
  k.dot = dot_for<Ops>(t);
  k.quantize = k.dot ? quantizer_for(t) : nullptr;
  k.tile_rows = kRows;
  k.tile_tokens = kTokens;
  switch (t) {
    case GgmlType::Q4_K: k.tile = tile_q45_k<Ops, BlockQ4_K, false, kKRows, kTokens>; break;
    case GgmlType::Q5_K: k.tile = tile_q45_k<Ops, BlockQ5_K, true, kKRows, kTokens>; break;
    case GgmlType::Q6_K: k.tile = tile_q6_k<Ops, kKRows, kTokens>; break;
    default: break;
  }
  if (t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K) k.tile_rows = kKRows;
  if (!k.tile) k.tile_rows = k.tile_tokens = 0;
  return k;
}

}  // namespace pagoda::quant_simd
