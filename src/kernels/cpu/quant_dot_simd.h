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

#include <cstring>

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

inline uint32_t load_bits(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Levels 0..31 of a Q5_0 / Q5_1 block: the nibbles with bit 4 from qh.
inline __m256i five_bit_levels(const uint8_t* qs, const uint8_t* qh) {
  return _mm256_or_si256(unpack_nibbles(qs), _mm256_and_si256(bits_to_bytes(load_bits(qh)), _mm256_set1_epi8(0x10)));
}

// The IQ4 levels (-127..113) of 32 nibbles, by table lookup.
inline __m256i iq4_levels(const uint8_t* qs) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
  return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), unpack_nibbles(qs));
}

// The 8 float lanes of the 32-element types (quant_dot_combine.h): one block's int32 partials, converted and
// fused-multiply-added with the block's scale; reduce8's tree at the end.
inline __m256 accumulate_lanes(__m256 lanes, __m256i partials, float scale) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(partials), _mm256_set1_ps(scale), lanes);
}
inline float reduce_lanes(__m256 lanes) {
  const __m128 u = _mm_add_ps(_mm256_castps256_ps128(lanes), _mm256_extractf128_ps(lanes, 1));  // l[i] + l[i + 4]
  const __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));                                          // u[i] + u[i + 2]
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));                                      // v[0] + v[1]
}

// Q8_0, Q4_0, Q5_0, IQ4_NL against Q8_0 activations: partials(block, x bytes) gives the block's int32 partials.
template <class Block, class Partials>
float dot_signed_levels(const uint8_t* wr, const uint8_t* xr, int64_t K, Partials partials) {
  const auto* w = reinterpret_cast<const Block*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_0*>(xr);
  __m256 lanes = _mm256_setzero_ps();
  for (int64_t b = 0; b < K / kQK; ++b)
    lanes = accumulate_lanes(lanes, partials(w[b], load32(x[b].qs)), half(w[b].d) * half(x[b].d));
  return reduce_lanes(lanes);
}

template <class Ops>
float dot_q8_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_signed_levels<BlockQ8_0>(w, x, K, [](const BlockQ8_0& b, __m256i xq) {
    // sum w * x = sum |w| * (x * sign(w)); |w| <= 128 as unsigned, |x| <= 127.
    const __m256i wq = load32(b.qs);
    return Ops::dot4(_mm256_setzero_si256(), _mm256_abs_epi8(wq), _mm256_sign_epi8(xq, wq));
  });
}

// Levels q - offset with q unsigned: sum q x - offset * sum x, lane by lane.
template <class Ops, int kOffsetShift>
inline __m256i offset_partials(__m256i q, __m256i xq) {
  const __m256i qx = Ops::dot4(_mm256_setzero_si256(), q, xq);
  const __m256i sx = Ops::dot4(_mm256_setzero_si256(), _mm256_set1_epi8(1), xq);
  return _mm256_sub_epi32(qx, _mm256_slli_epi32(sx, kOffsetShift));
}

template <class Ops>
float dot_q4_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_signed_levels<BlockQ4_0>(w, x, K, [](const BlockQ4_0& b, __m256i xq) {
    return offset_partials<Ops, 3>(unpack_nibbles(b.qs), xq);  // q - 8
  });
}

template <class Ops>
float dot_q5_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_signed_levels<BlockQ5_0>(w, x, K, [](const BlockQ5_0& b, __m256i xq) {
    return offset_partials<Ops, 4>(five_bit_levels(b.qs, b.qh), xq);  // q - 16
  });
}

template <class Ops>
float dot_iq4_nl(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_signed_levels<BlockIQ4_NL>(w, x, K, [](const BlockIQ4_NL& b, __m256i xq) {
    const __m256i v = iq4_levels(b.qs);
    return Ops::dot4(_mm256_setzero_si256(), _mm256_abs_epi8(v), _mm256_sign_epi8(xq, v));
  });
}

// Q4_1 / Q5_1 against Q8_1: unsigned levels in the lanes, the mins' sum beside them.
template <class Ops, class Block, bool kFiveBits>
float dot_with_min(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const Block*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_1*>(xr);
  __m256 lanes = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b) {
    __m256i q;
    if constexpr (kFiveBits)
      q = five_bit_levels(w[b].qs, w[b].qh);
    else
      q = unpack_nibbles(w[b].qs);
    lanes = accumulate_lanes(lanes, Ops::dot4(_mm256_setzero_si256(), q, load32(x[b].qs)), half(w[b].d) * half(x[b].d));
    mins = mins + half(w[b].m) * half(x[b].s);
  }
  return reduce_lanes(lanes) + mins;
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

// Q4_K, and Q5_K with the fifth bit of sub-block j's element l at bit j of qh[l].
template <class Ops, class Block, bool kFiveBits>
float dot_q45_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = reinterpret_cast<const Block*>(wr);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(xr);
  const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    uint8_t sc[8], m[8];
    k4_scales(w[b].scales, sc, m);
    __m256i sum = _mm256_setzero_si256();
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFiveBits) qh = load32(w[b].qh);
    for (int c = 0; c < 4; ++c) {  // 32 bytes: sub-block 2c in the low nibbles, 2c + 1 in the high ones
      const __m256i bytes = load32(w[b].qs + 32 * c);
      __m256i lo = _mm256_and_si256(bytes, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
      if constexpr (kFiveBits) {
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 1), one), 4));
        qh = _mm256_srli_epi16(qh, 2);
      }
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load32(x[b].qs + 64 * c));  // pairs <= 2 * 31 * 127
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load32(x[b].qs + 64 * c + 32));
      sum = Ops::madd16(sum, p_lo, _mm256_set1_epi16(sc[2 * c]));
      sum = Ops::madd16(sum, p_hi, _mm256_set1_epi16(sc[2 * c + 1]));
    }
    acc = k_with_min(acc, hsum(sum), k4_min_sum(m, x[b].bsums), half(w[b].d), half(w[b].dmin), x[b].d);
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
    acc = k_plain(acc, hsum(sum) - 32 * offset, half(w[b].d), x[b].d);
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
    default: return nullptr;
  }
}

}  // namespace pagoda::quant_simd
