// Packed Q8_0 / Q4_0 / IQ4_NL against Q8_0 activations (and Q4_1, Q5_0, Q5_1: tile_legacy) on AVX-512 VNNI: lane r of every zmm is row r of the group.
// Per block, 8 level vectors (64 bytes of 16 rows each) are made once and meet each token's 4-byte groups,
// broadcast, in 8 dpbusd (unsigned levels x signed activations, no saturation); the token's seed removes the
// levels' offset: sum (v + off) x - off sum x. Then one conversion, one scale product and one fma per 16 rows:
// block_exact_update's operations in every lane, so the bits are the portable dot's.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13  // gcc 12's false positives in avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/quant_dot_packed.h"
#include "kernels/cpu/quant_dot_packed_simd.h"

namespace pagoda {
namespace {

using namespace quant_packed;

// seed + the 8 level vectors' dpbusd with the token's 4-byte groups at x_offset(i), in two independent chains
// (even and odd i) added at the end: integers are exact, so the order is free, and a lone token (decode) no longer
// waits on one chain of 8 dependent dpbusd per block.
template <class Offset>
inline __m512i dot8(__m512i seed, const __m512i lv[8], const int8_t* q, Offset x_offset) {
  __m512i even = seed, odd = _mm512_setzero_si512();
  for (int i = 0; i < 8; i += 2) {
    even = _mm512_dpbusd_epi32(even, lv[i], _mm512_set1_epi32(load_i32(q + x_offset(i))));
    odd = _mm512_dpbusd_epi32(odd, lv[i + 1], _mm512_set1_epi32(load_i32(q + x_offset(i + 1))));
  }
  return _mm512_add_epi32(even, odd);
}

struct Q8_0Levels {  // signed levels v as v + 128
  static constexpr int kChunks = 8, kSeedShift = 7;
  static constexpr int x_offset(int i) { return x_offset_q8(i); }
  static void levels(const uint8_t* qs, __m512i lv[8]) {
    for (int c = 0; c < 8; ++c)
      lv[c] = _mm512_xor_si512(_mm512_loadu_si512(qs + 64 * c), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};
struct Q4_0Levels {  // q - 8 as q
  static constexpr int kChunks = 4, kSeedShift = 3;
  static constexpr int x_offset(int i) { return x_offset_nibbles(i); }
  static void levels(const uint8_t* qs, __m512i lv[8]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m512i bytes = _mm512_loadu_si512(qs + 64 * c);
      lv[2 * c] = _mm512_and_si512(bytes, m4);
      lv[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), m4);
    }
  }
};
struct IQ4_NLLevels {  // table levels v as v + 128
  static constexpr int kChunks = 4, kSeedShift = 7;
  static constexpr int x_offset(int i) { return x_offset_nibbles(i); }
  static void levels(const uint8_t* qs, __m512i lv[8]) {
    Q4_0Levels::levels(qs, lv);
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    for (int i = 0; i < 8; ++i)
      lv[i] = _mm512_xor_si512(_mm512_shuffle_epi8(table, lv[i]), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

template <class Kind, int kTokens>
void tile(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
          int n_rows) {
  constexpr size_t kRecord = record_bytes(Kind::kChunks);
  const int64_t nb = K / kQK;
  const uint8_t* rows[kTokens];
  for (int t = 0; t < kTokens; ++t) rows[t] = x0 + t * x_stride;
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    __m512i lv[8];
    Kind::levels(rec + 2 * kPackRows, lv);
    for (int t = 0; t < kTokens; ++t) {
      const TokenRow row(rows[t], K);
      const int8_t* q = row.qs(b);
      __m512i sum = _mm512_set1_epi32(-row.block_sum(b) * (1 << Kind::kSeedShift));
      sum = dot8(sum, lv, q, [](int i) { return Kind::x_offset(i); });
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(row.scale(b))), acc[t]);
    }
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, valid, acc[t]);
}

// Q4_1 and Q5_1 (unsigned levels and a min, against Q8_1) and Q5_0 (levels q - 16, against Q8_0). Record
// (quant_dot_packed.cpp): d[16] (f16), Q4_1 / Q5_1's m[16] (f16), Q5_0 / Q5_1's qh[16][4] (lane r: row r's 32
// fifth bits), qs[4][16][4] as Q4_0's. Level vector i holds elements e .. e + 3, e = x_offset_nibbles(i), of every
// row: the nibbles, and for the five-bit types bit 4 from qh: one byte shuffle brings byte e / 8 of each lane's qh
// under its 4 bytes, a test against bits e % 8 .. e % 8 + 3 gives the byte mask of set bits, a masked move adds 16.
// Per token, 8 dpbusd give each row's exact sum of q x (Q5_0 seeded with -16 * the block's sum of x); then
// block_exact_update, and min_update beside it, in every lane: the portable dot's operations.
template <bool kMin, bool kFiveBits, int kTokens>
void tile_legacy(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                 int n_rows) {
  constexpr size_t kBlock = kMin ? (kFiveBits ? sizeof(BlockQ5_1) : sizeof(BlockQ4_1)) : sizeof(BlockQ5_0);
  constexpr size_t kRecord = kPackRows * kBlock;
  constexpr size_t kMinAt = 2 * kPackRows, kQhAt = kMin ? 4 * kPackRows : 2 * kPackRows;
  constexpr size_t kQsAt = kQhAt + (kFiveBits ? 4 * kPackRows : 0);
  const int64_t nb = K / kQK;
  const __m512i sixteen = _mm512_set1_epi8(16);
  const __m512i lane_bytes = _mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0);
  __m512 acc[kTokens], mins[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = mins[t] = _mm512_setzero_ps();
  // Decode streams the next group ahead (as the AVX2 tile does): SmolLM2 Q4_1 decode +0.5-3% on a Zen 5, a small
  // gain (docs/PERFORMANCE.md). On the Q8_0 output head (tile() above) it measured no gain.
  constexpr bool kStreamAhead = kTokens == 1;
  NextGroupPrefetch ahead(group, nb * kRecord, nb);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    if constexpr (kStreamAhead) ahead.at(b);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    __m512i lv[8];
    Q4_0Levels::levels(rec + kQsAt, lv);
    if constexpr (kFiveBits) {
      const __m512i qh = _mm512_loadu_si512(rec + kQhAt);
      for (int i = 0; i < 8; ++i) {
        const int e = x_offset_nibbles(i), o = e % 8;
        const __m512i bytes = _mm512_shuffle_epi8(qh, _mm512_add_epi8(lane_bytes, _mm512_set1_epi8(static_cast<char>(e / 8))));
        const __m512i bits = _mm512_set1_epi32(static_cast<int>((1u << o) | (2u << (o + 8)) | (4u << (o + 16)) | (8u << (o + 24))));
        lv[i] = _mm512_or_si512(lv[i], _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(bytes, bits), sixteen));
      }
    }
    [[maybe_unused]] __m512 mw;
    if constexpr (kMin) mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kMinAt)));
    for (int t = 0; t < kTokens; ++t) {
      const uint8_t* xrow = x0 + t * x_stride;
      const int8_t* q;
      float dx;
      __m512i sum;
      if constexpr (kMin) {
        const BlockQ8_1& xb = reinterpret_cast<const BlockQ8_1*>(xrow)[b];
        q = xb.qs;
        dx = _cvtsh_ss(xb.d);
        sum = _mm512_setzero_si512();
      } else {
        const TokenRow row(xrow, K);
        q = row.qs(b);
        dx = row.scale(b);
        sum = _mm512_set1_epi32(-16 * row.block_sum(b));
      }
      sum = dot8(sum, lv, q, x_offset_nibbles);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc[t]);
      if constexpr (kMin) {
        const float sx = _cvtsh_ss(reinterpret_cast<const BlockQ8_1*>(xrow)[b].s);
        mins[t] = _mm512_add_ps(mins[t], _mm512_mul_ps(mw, _mm512_set1_ps(sx)));
      }
    }
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t)
    _mm512_mask_storeu_ps(y + t * y_stride, valid, kMin ? _mm512_add_ps(acc[t], mins[t]) : acc[t]);
}

// Q4_K (and Q5_K) against Q8_K. Record (quant_dot_packed.cpp): d[16], dmin[16] (f16), scales[12][16] (the 12
// packed scale bytes, byte k of every row together), Q5_K's qh[8][16][4] (4-byte group k of the 32 fifth-bit bytes
// of every row), then qs[32][16][4]: 4-byte group g of the 128 nibble bytes of every row. Sub-block j (32 elements)
// is nibble j % 2 of groups 8 (j / 2) .. 8 (j / 2) + 7, and Q5_K's bit j of qh group k adds 16 to the levels of
// qs group 8 (j / 2) + k. Per sub-block and token, 8 dpbusd give each row's exact sum of q x, times its 6-bit scale
// (vpmulld), summed over the sub-blocks: sumi; the mins' sum m_j * (bsum_2j + bsum_2j+1) is 4 dpwssd of
// (m_2i, m_2i+1) int16 pairs. Then k_with_min's operations in every lane.
template <bool kFiveBits, int kTokens>
void tile_q45_k(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                int n_rows) {
  constexpr size_t kRecord = kPackRows * (kFiveBits ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
  const int64_t nb = K / kQK_K;
  const __m512i m4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    prefetch_ahead<kRecord>(rec);
    const BlockQ8_K* x[kTokens];
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    const Q4_KScales scales(rec + 64);
    const uint8_t* qh = rec + 256;
    const uint8_t* qs = rec + 256 + (kFiveBits ? 512 : 0);
    __m512i sumi[kTokens];
    for (int t = 0; t < kTokens; ++t) sumi[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i lv[8];
      for (int k = 0; k < 8; ++k) {
        const __m512i bytes = _mm512_loadu_si512(qs + 64 * (8 * (j / 2) + k));
        lv[k] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(bytes, 4) : bytes, m4);
        if constexpr (kFiveBits) {  // bit j of each qh byte to bit 4 (the shift stays inside each byte)
          const __m512i h = _mm512_loadu_si512(qh + 64 * k);
          const __m512i at4 = j < 4 ? _mm512_slli_epi16(h, 4 - j) : _mm512_srli_epi16(h, j - 4);
          lv[k] = _mm512_or_si512(lv[k], _mm512_and_si512(at4, bit4));
        }
      }
      const __m512i sc = _mm512_cvtepu8_epi32(scales.sc[j]);
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* q = x[t]->qs + 32 * j;
        __m512i sum = _mm512_setzero_si512();
        for (int k = 0; k < 8; ++k) sum = _mm512_dpbusd_epi32(sum, lv[k], _mm512_set1_epi32(load_i32(q + 4 * k)));
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(sum, sc));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
    __m512i mins[4];  // lane r: (m_2i, m_2i+1) of row r as int16
    for (int i = 0; i < 4; ++i)
      mins[i] = _mm512_cvtepu8_epi16(_mm256_set_m128i(scales.min_pairs(i, 1), scales.min_pairs(i, 0)));
    for (int t = 0; t < kTokens; ++t) {
      // bsum32_j = bsums[2j] + bsums[2j + 1]; 32-bit element i holds (bsum32_2i, bsum32_2i+1).
      const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums)),
                                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums + 8)));
      alignas(16) int32_t pair[4];  // (bsum32_2i, bsum32_2i+1) as int16 pairs
      _mm_store_si128(reinterpret_cast<__m128i*>(pair), pairs);
      __m512i summ = _mm512_setzero_si512();
      for (int i = 0; i < 4; ++i) summ = _mm512_dpwssd_epi32(summ, mins[i], _mm512_set1_epi32(pair[i]));
      const __m512 dx = _mm512_set1_ps(x[t]->d);
      const __m512 with_scale = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(sumi[t])));
      acc[t] = _mm512_sub_ps(with_scale, _mm512_mul_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(summ)));
    }
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, valid, acc[t]);
}

// Q2_K and Q3_K against Q8_K. Records (quant_dot_packed.cpp): Q2_K d[16], dmin[16] (f16), scales[16][16] (byte k
// of every row together), qs[16][16][4]; Q3_K d[16] (f16), hmask[8][16][4], qs[16][16][4], scales[12][16]. Group
// 8h + 2f + g (16 elements) takes its 2 low bits from qs units 8h + 4g + k (k < 4), shifted by 2f, and Q3_K its
// third bit from hmask unit 4g + k, bit 4h + f: unsigned levels v (Q3_K: q + 4, seeded with -4 * the group's
// activation sum). Per token and group, 4 dpbusd give each row's exact sum of q x, times its scale (Q2_K: the low
// nibble; Q3_K: the 6-bit scale - 32, unpacked for 16 rows at once) by vpmulld, into sumi; Q2_K's mins' sum
// (high nibbles x bsums) is 8 dpwssd of int16 pairs. Then k_with_min's (Q2_K) or k_plain's (Q3_K) operations in
// every lane.
template <bool kQ3, int kTokens>
void tile_q23_k(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                int n_rows) {
  constexpr size_t kRecord = kPackRows * (kQ3 ? sizeof(BlockQ3_K) : sizeof(BlockQ2_K));
  constexpr size_t kScalesAt = kQ3 ? 1568 : 64, kQsAt = kQ3 ? 544 : 320, kHmaskAt = 32;
  const int64_t nb = K / kQK_K;
  const __m512i two_bits = _mm512_set1_epi8(3), one_bit = _mm512_set1_epi8(1);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    prefetch_ahead<kRecord>(rec);
    const BlockQ8_K* x[kTokens];
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    __m128i sc8[16];  // 16 rows' scale of group j, one byte per row (Q3_K: signed)
    const uint8_t* scales = rec + kScalesAt;
    for (int j = 0; j < 16; ++j) {
      sc8[j] = kQ3 ? q3_k_scales(scales, j) : _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * j));
    }
    __m512i sumi[kTokens];
    for (int t = 0; t < kTokens; ++t) sumi[t] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h)
      for (int g = 0; g < 2; ++g) {
        __m512i units[4], high[4];
        for (int k = 0; k < 4; ++k) {
          units[k] = _mm512_loadu_si512(rec + kQsAt + 64 * (8 * h + 4 * g + k));
          if constexpr (kQ3) high[k] = _mm512_loadu_si512(rec + kHmaskAt + 64 * (4 * g + k));
        }
        for (int f = 0; f < 4; ++f) {
          const int j = 8 * h + 2 * f + g;
          __m512i lv[4];
          for (int k = 0; k < 4; ++k) {
            lv[k] = _mm512_and_si512(_mm512_srli_epi16(units[k], 2 * f), two_bits);
            if constexpr (kQ3)
              lv[k] = _mm512_or_si512(lv[k], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(high[k], 4 * h + f), one_bit), 2));
          }
          const __m512i sc = kQ3 ? _mm512_cvtepi8_epi32(sc8[j])
                                 : _mm512_and_si512(_mm512_cvtepu8_epi32(sc8[j]), _mm512_set1_epi32(0xF));
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* q = x[t]->qs + 16 * j;
            __m512i sum = kQ3 ? _mm512_set1_epi32(-4 * x[t]->bsums[j]) : _mm512_setzero_si512();
            for (int k = 0; k < 4; ++k) sum = _mm512_dpbusd_epi32(sum, lv[k], _mm512_set1_epi32(load_i32(q + 4 * k)));
            sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(sum, sc));
          }
        }
      }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    if constexpr (kQ3) {
      for (int t = 0; t < kTokens; ++t)
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(x[t]->d)), _mm512_cvtepi32_ps(sumi[t])));
    } else {
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
      __m512i mins[8];  // lane r: (m_2i, m_2i+1) of row r as int16, m = the scale byte's high nibble
      for (int i = 0; i < 8; ++i) {
        const __m128i a = _mm_and_si128(_mm_srli_epi16(sc8[2 * i], 4), _mm_set1_epi8(0x0F));
        const __m128i c = _mm_and_si128(_mm_srli_epi16(sc8[2 * i + 1], 4), _mm_set1_epi8(0x0F));
        mins[i] = _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(a, c), _mm_unpacklo_epi8(a, c)));
      }
      for (int t = 0; t < kTokens; ++t) {
        __m512i summ = _mm512_setzero_si512();
        for (int i = 0; i < 8; ++i) summ = _mm512_dpwssd_epi32(summ, mins[i], _mm512_set1_epi32(load_i32(x[t]->bsums + 2 * i)));
        const __m512 dx = _mm512_set1_ps(x[t]->d);
        const __m512 with_scale = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, dx), _mm512_cvtepi32_ps(sumi[t])));
        acc[t] = _mm512_sub_ps(with_scale, _mm512_mul_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(summ)));
      }
    }
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, valid, acc[t]);
}

// Q6_K against Q8_K. Record (quant_dot_packed.cpp): d[16] (f16), scales[16][16] (int8, sub-block s of every row
// together), ql[32][16][4], qh[16][16][4]. Element 128h + 32f + 16kh + 4kk + i takes its low 4 bits from nibble f / 2
// of ql unit 16h + 8 (f % 2) + 4kh + kk and its top 2 from bits 2f of qh unit 8h + 4kh + kk (byte i of the row's
// 4); sub-block s = 8h + 2f + kh. A quarter (h, kh) makes 16 level vectors (q in 0..63 as u8) from 4 + 4 + 4 loads;
// per token and sub-block, 4 dpbusd seeded with -32 * bsum_s give sum (q - 32) x exactly, times the signed scale
// (vpmulld) into sumi. Then k_plain's operations in every lane.
template <int kTokens>
void tile_q6_k(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
               int n_rows) {
  constexpr size_t kRecord = kPackRows * sizeof(BlockQ6_K);
  const int64_t nb = K / kQK_K;
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    prefetch_ahead<kRecord>(rec);
    const uint8_t* scales = rec + 32;
    const uint8_t* ql = rec + 32 + 256;
    const uint8_t* qh = ql + 2048;
    const BlockQ8_K* x[kTokens];
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    __m512i sumi[kTokens];
    for (int t = 0; t < kTokens; ++t) sumi[t] = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h)
      for (int kh = 0; kh < 2; ++kh) {
        __m512i lv[4][4];  // [f][kk]
        for (int kk = 0; kk < 4; ++kk) {
          const int k = 4 * kh + kk;
          const __m512i a = _mm512_loadu_si512(ql + 64 * (16 * h + k));
          const __m512i c = _mm512_loadu_si512(ql + 64 * (16 * h + 8 + k));
          const __m512i hb = _mm512_loadu_si512(qh + 64 * (8 * h + k));
          lv[0][kk] = _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), bits45));
          lv[1][kk] = _mm512_or_si512(_mm512_and_si512(c, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), bits45));
          lv[2][kk] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), low4), _mm512_and_si512(hb, bits45));
          lv[3][kk] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), low4),
                                      _mm512_and_si512(_mm512_srli_epi16(hb, 2), bits45));
        }
        for (int f = 0; f < 4; ++f) {
          const int s = 8 * h + 2 * f + kh;
          const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * s)));
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* q = x[t]->qs + 16 * s;
            __m512i sum = _mm512_set1_epi32(-32 * x[t]->bsums[s]);
            for (int kk = 0; kk < 4; ++kk)
              sum = _mm512_dpbusd_epi32(sum, lv[f][kk], _mm512_set1_epi32(load_i32(q + 4 * kk)));
            sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(sum, sc));
          }
        }
      }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(x[t]->d)), _mm512_cvtepi32_ps(sumi[t])));
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, valid, acc[t]);
}

// IQ4_XS against Q8_K. Record (quant_dot_packed.cpp): d[16] (f16), scales_h[16] (u16), scales_l[4][16], then
// qs[32][16][4]: sub-block j (32 elements) is 4-byte groups 4j .. 4j + 3, low nibbles its elements 4c.., high
// nibbles 16 + 4c... Levels are the table's values v as v + 128 (unsigned for dpbusd), seeded per sub-block with
// -128 * (bsum_2j + bsum_2j+1), so each row's sum v x is exact; times its signed scale ls - 32 (vpmulld) into
// sumi. Then k_plain's operations in every lane.
template <int kTokens>
void tile_iq4_xs(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                 int n_rows) {
  constexpr size_t kRecord = kPackRows * sizeof(BlockIQ4_XS);
  const int64_t nb = K / kQK_K;
  const __m512i m4 = _mm512_set1_epi8(0x0F), flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    prefetch_ahead<kRecord>(rec);
    const BlockQ8_K* x[kTokens];
    for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
    const __m512i scales_h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32)));
    const uint8_t* qs = rec + 128;
    __m512i sumi[kTokens];
    for (int t = 0; t < kTokens; ++t) sumi[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      const __m512i low = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 64 + 16 * (j / 2))));
      const __m512i ls = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(low, 4 * (j % 2)), _mm512_set1_epi32(0xF)),
                                         _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(scales_h, 2 * j),
                                                                            _mm512_set1_epi32(3)), 4));
      const __m512i sc = _mm512_sub_epi32(ls, _mm512_set1_epi32(32));
      __m512i lv[8];  // [2c]: low nibbles of group 4j + c, [2c + 1]: high nibbles
      for (int c = 0; c < 4; ++c) {
        const __m512i bytes = _mm512_loadu_si512(qs + 64 * (4 * j + c));
        lv[2 * c] = _mm512_xor_si512(_mm512_shuffle_epi8(table, _mm512_and_si512(bytes, m4)), flip);
        lv[2 * c + 1] = _mm512_xor_si512(_mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes, 4), m4)), flip);
      }
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* q = x[t]->qs + 32 * j;
        __m512i sum = _mm512_set1_epi32(-128 * (x[t]->bsums[2 * j] + x[t]->bsums[2 * j + 1]));
        for (int i = 0; i < 8; ++i)
          sum = _mm512_dpbusd_epi32(sum, lv[i], _mm512_set1_epi32(load_i32(q + x_offset_nibbles(i))));
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(sum, sc));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec)));
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(x[t]->d)), _mm512_cvtepi32_ps(sumi[t])));
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, valid, acc[t]);
}

constexpr int kMaxTokens = 8;

template <class Kind>
struct Tile32 {
  template <int kTokens>
  struct Of {
    static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
      tile<Kind, kTokens>(g, x0, xs, K, y, ys, n_rows);
    }
  };
};
template <bool kMin, bool kFiveBits>
struct TileLegacy {
  template <int kTokens>
  struct Of {
    static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
      tile_legacy<kMin, kFiveBits, kTokens>(g, x0, xs, K, y, ys, n_rows);
    }
  };
};
template <bool kQ3>
struct TileQ23_K {
  template <int kTokens>
  struct Of {
    static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
      tile_q23_k<kQ3, kTokens>(g, x0, xs, K, y, ys, n_rows);
    }
  };
};
template <int kTokens>
struct TileQ4_K {
  static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
    tile_q45_k<false, kTokens>(g, x0, xs, K, y, ys, n_rows);
  }
};
template <int kTokens>
struct TileQ5_K {
  static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
    tile_q45_k<true, kTokens>(g, x0, xs, K, y, ys, n_rows);
  }
};
template <int kTokens>
struct TileIQ4_XS {
  static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
    tile_iq4_xs<kTokens>(g, x0, xs, K, y, ys, n_rows);
  }
};
template <int kTokens>
struct TileQ6_K {
  static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
    tile_q6_k<kTokens>(g, x0, xs, K, y, ys, n_rows);
  }
};

}  // namespace

PackedKernels packed_kernels_avx512(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return {tile_any<Tile32<Q8_0Levels>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q4_0: return {tile_any<Tile32<Q4_0Levels>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::IQ4_NL: return {tile_any<Tile32<IQ4_NLLevels>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q4_1: return {tile_any<TileLegacy<true, false>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q5_0: return {tile_any<TileLegacy<false, true>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q5_1: return {tile_any<TileLegacy<true, true>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q2_K: return {tile_any<TileQ23_K<false>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q3_K: return {tile_any<TileQ23_K<true>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q4_K: return {tile_any<TileQ4_K, kMaxTokens>, kMaxTokens};
    case GgmlType::Q5_K: return {tile_any<TileQ5_K, kMaxTokens>, kMaxTokens};
    case GgmlType::IQ4_XS: return {tile_any<TileIQ4_XS, kMaxTokens>, kMaxTokens};
    case GgmlType::Q6_K: return {tile_any<TileQ6_K, kMaxTokens>, kMaxTokens};
    default: return {};
  }
}

}  // namespace pagoda
