// Packed Q8_0 / Q4_0 / IQ4_NL against Q8_0 activations on AVX2: a group's 16 rows in two halves of 8, lane r of
// every ymm being row 8h + r. Per block and half, 8 level vectors (32 bytes: 4 of each row) meet each token's 4-byte
// groups, broadcast, in maddubs (u8 x s8 -> int16 pairs): Q4_0's unsigned nibbles sum all 8 in int16 (at most
// 8 * 2 * 15 * 127 < 32767) before one madd; the signed types use |v| x (x * sign(v)) (pairs <= 2 * 128 * 127) and a
// madd per vector. Integers are exact, and the float update is block_exact_update's in every lane, so the bits are
// the portable dot's.
#include <immintrin.h>

#include <type_traits>

#include "kernels/cpu/quant_dot_packed.h"
#include "kernels/cpu/quant_dot_packed_simd.h"

namespace pagoda {
namespace {

using namespace quant_packed;

inline __m256i broadcast4(const int8_t* p) { return _mm256_set1_epi32(load_i32(p)); }

// Unsigned Q4_0 nibbles q (levels q - 8): sum q x in int16, then - 8 sum x.
struct Q4_0Half {
  static constexpr int kChunks = 4;
  __m256i lv[8];
  void load(const uint8_t* qs, int half) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * c + 32 * half));
      lv[2 * c] = _mm256_and_si256(bytes, m4);
      lv[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
    }
  }
  __m256i sum(const int8_t* q, int32_t block_sum) const {
    __m256i s16 = _mm256_maddubs_epi16(lv[0], broadcast4(q + x_offset_nibbles(0)));
    for (int i = 1; i < 8; ++i) s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lv[i], broadcast4(q + x_offset_nibbles(i))));
    return _mm256_add_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)), _mm256_set1_epi32(-block_sum * 8));
  }
};

// Signed levels v: |v| and v kept, sum of maddubs(|v|, x * sign(v)) per vector.
template <int kOffsetKind>  // 0: Q8_0 (8 chunks of levels), 1: IQ4_NL (4 chunks of nibbles through the table)
struct SignedHalf {
  static constexpr int kChunks = kOffsetKind == 0 ? 8 : 4;
  __m256i lv[8], mag[8];
  void load(const uint8_t* qs, int half) {
    if constexpr (kOffsetKind == 0) {
      for (int c = 0; c < 8; ++c) lv[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * c + 32 * half));
    } else {
      const __m256i m4 = _mm256_set1_epi8(0x0F);
      const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
      const __m256i table = _mm256_set_m128i(t, t);
      for (int c = 0; c < 4; ++c) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * c + 32 * half));
        lv[2 * c] = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, m4));
        lv[2 * c + 1] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4));
      }
    }
    for (int i = 0; i < 8; ++i) mag[i] = _mm256_abs_epi8(lv[i]);
  }
  static constexpr int x_offset(int i) { return kOffsetKind == 0 ? x_offset_q8(i) : x_offset_nibbles(i); }
  __m256i sum(const int8_t* q, int32_t) const {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i s = _mm256_setzero_si256();
    for (int i = 0; i < 8; ++i)
      s = _mm256_add_epi32(
          s, _mm256_madd_epi16(_mm256_maddubs_epi16(mag[i], _mm256_sign_epi8(broadcast4(q + x_offset(i)), lv[i])), ones));
    return s;
  }
};

// y[t * y_stride + r] = lane r of acc[t] for r < min(8, valid).
template <int kTokens>
void store_rows(const __m256 (&acc)[kTokens], float* y, int64_t y_stride, int valid) {
  if (valid >= 8) {
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
  } else {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int t = 0; t < kTokens; ++t) _mm256_maskstore_ps(y + t * y_stride, mask, acc[t]);
  }
}

// The two 8-row halves of a one-token tile's 16 rows, stored with a fixed path (no loop indexing them), so the
// accumulators stay in registers (indexed in a loop, GCC kept them on the stack and carried them through memory).
inline void store_halves(__m256 low, __m256 high, float* y, int n_rows) {
  const __m256 first[1] = {low}, second[1] = {high};
  store_rows<1>(first, y, 0, n_rows);
  if (n_rows > 8) store_rows<1>(second, y + 8, 0, n_rows - 8);
}

// Q8_0 decode (one token; the output head of a tied-embedding model such as SmolLM2's): both halves of each record in
// one pass, as tile_q4_1_decode does, so each block's 8 activation broadcasts serve the 16 rows and the records are
// read once, in order. The integer sums are exact in any order, and each lane's float update is tile()'s: the
// same bits.
void tile_q8_0_decode(const uint8_t* group, const uint8_t* x0, int64_t K, float* y, int n_rows) {
  constexpr size_t kRecord = record_bytes(8);
  const int64_t nb = K / kQK;
  const __m256i ones = _mm256_set1_epi16(1);
  const TokenRow row(x0, K);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  NextGroupPrefetch ahead(group, nb * kRecord, nb);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    ahead.at(b);
    const int8_t* q = row.qs(b);
    __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
#pragma GCC unroll 1  // unrolled, GCC hoisted every load and spilled the accumulators (16 ymm registers)
    for (int c = 0; c < 8; ++c) {
      const __m256i xb = broadcast4(q + x_offset_q8(c));
      const uint8_t* chunk = rec + 2 * kPackRows + 64 * c;
      const __m256i lv0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk));
      const __m256i lv1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32));
      auto products = [&](__m256i lv) {  // 8 rows' sums of 4 signed products, as int32
        return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(lv), _mm256_sign_epi8(xb, lv)), ones);
      };
      sum0 = _mm256_add_epi32(sum0, products(lv0));
      sum1 = _mm256_add_epi32(sum1, products(lv1));
    }
    const __m256 dx = _mm256_set1_ps(row.scale(b));
    const __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec)));
    const __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16)));
    acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum0), _mm256_mul_ps(dw0, dx), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum1), _mm256_mul_ps(dw1, dx), acc1);
  }
  store_halves(acc0, acc1, y, n_rows);
}

template <class Half, int kTokens>
void tile(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
          int n_rows) {
  if constexpr (std::is_same_v<Half, SignedHalf<0>> && kTokens == 1) return tile_q8_0_decode(group, x0, K, y, n_rows);
  constexpr size_t kRecord = record_bytes(Half::kChunks);
  const int64_t nb = K / kQK;
  const uint8_t* rows[kTokens];
  for (int t = 0; t < kTokens; ++t) rows[t] = x0 + t * x_stride;
  for (int half = 0; half < 2 && 8 * half < n_rows; ++half) {
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* rec = group + b * kRecord;
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * half)));
      Half w;
      w.load(rec + 2 * kPackRows, half);
      for (int t = 0; t < kTokens; ++t) {
        const TokenRow row(rows[t], K);
        const __m256i sum = w.sum(row.qs(b), row.block_sum(b));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(row.scale(b))), acc[t]);
      }
    }
    store_rows(acc, y + 8 * half, y_stride, n_rows - 8 * half);
  }
}

// Q4_1 decode (one token): both halves of each record in one pass, so a block's activation broadcasts and scales are
// read once for the 16 rows, not once per half, and each chunk's levels go straight into the maddubs (no array of 8).
// The int16 and int32 sums are exact in any order, and the float updates per lane are tile_legacy's: the same bits.
void tile_q4_1_decode(const uint8_t* group, const uint8_t* x0, int64_t K, float* y, int n_rows) {
  constexpr size_t kRecord = kPackRows * sizeof(BlockQ4_1);
  constexpr size_t kMinAt = 2 * kPackRows, kQsAt = 4 * kPackRows;
  const int64_t nb = K / kQK;
  const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const BlockQ8_1* x = reinterpret_cast<const BlockQ8_1*>(x0);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), mins0 = _mm256_setzero_ps(),
         mins1 = _mm256_setzero_ps();
  NextGroupPrefetch ahead(group, nb * kRecord, nb);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = group + b * kRecord;
    ahead.at(b);
    __m256i s16_0 = _mm256_setzero_si256(), s16_1 = _mm256_setzero_si256();  // int16 sums stay exact from zero
    // Chunk c's low nibbles are elements 4c .. 4c + 3, its high ones 16 + 4c .. (x_offset_nibbles); walked by
    // pointers, the loop keeps no index arithmetic.
    const int8_t* q = x[b].qs;
    const uint8_t* chunk = rec + kQsAt;
    // Two chunks an iteration: against one, 51-53 -> 59 GB/s of weights in L2 on a Zen 5 core (with the pointers
    // and the scales below, 61); all four, GCC spills as in tile_q8_0_decode (49).
#pragma GCC unroll 2
    for (int c = 0; c < 4; ++c, q += 4, chunk += 64) {
      const __m256i x_low = broadcast4(q), x_high = broadcast4(q + 16);
      const __m256i bytes0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk));
      const __m256i bytes1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32));
      auto products = [&](__m256i bytes) {  // both nibbles' products, summed in int16 pairs
        const __m256i low = _mm256_and_si256(bytes, m4), high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
        return _mm256_add_epi16(_mm256_maddubs_epi16(low, x_low), _mm256_maddubs_epi16(high, x_high));
      };
      s16_0 = _mm256_add_epi16(s16_0, products(bytes0));
      s16_1 = _mm256_add_epi16(s16_1, products(bytes1));
    }
    // The block's d and s side by side in every pair of lanes, then each spread to all 8.
    const __m256 d_s = _mm256_cvtph_ps(_mm_set1_epi32(load_i32(&x[b].d)));
    const __m256 dx = _mm256_moveldup_ps(d_s), sx = _mm256_movehdup_ps(d_s);
    const __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec)));
    const __m256 dw1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16)));
    const __m256 mw0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + kMinAt)));
    const __m256 mw1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + kMinAt + 16)));
    acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s16_0, ones)), _mm256_mul_ps(dw0, dx), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(s16_1, ones)), _mm256_mul_ps(dw1, dx), acc1);
    mins0 = _mm256_add_ps(mins0, _mm256_mul_ps(mw0, sx));
    mins1 = _mm256_add_ps(mins1, _mm256_mul_ps(mw1, sx));
  }
  store_halves(_mm256_add_ps(acc0, mins0), _mm256_add_ps(acc1, mins1), y, n_rows);
}

// Q4_1 and Q5_1 (unsigned levels and a min, against Q8_1) and Q5_0 (levels q - 16, against Q8_0), 8 rows at a
// time (record: quant_dot_packed_avx512.cpp's tile_legacy). The fifth bits: one byte shuffle brings byte e / 8 of
// each row's qh under the 4 bytes of level vector i (elements e .. e + 3), a compare against bits e % 8 .. e % 8 + 3
// marks the set ones, 16 is or-ed in. maddubs of the unsigned levels and broadcast activations sum in int16: the
// 4-bit levels' 8 vectors at once (8 * 2 * 15 * 127 < 32767), the 5-bit levels' in two runs of 4
// (4 * 2 * 31 * 127 < 32767), each run one madd into int32. Then block_exact_update, and min_update beside it, in
// every lane: the portable dot's operations.
template <bool kMin, bool kFiveBits, int kTokens>
void tile_legacy(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                 int n_rows) {
  constexpr size_t kBlock = kMin ? (kFiveBits ? sizeof(BlockQ5_1) : sizeof(BlockQ4_1)) : sizeof(BlockQ5_0);
  constexpr size_t kRecord = kPackRows * kBlock;
  constexpr size_t kMinAt = 2 * kPackRows, kQhAt = kMin ? 4 * kPackRows : 2 * kPackRows;
  constexpr size_t kQsAt = kQhAt + (kFiveBits ? 4 * kPackRows : 0);
  if constexpr (kMin && !kFiveBits && kTokens == 1) return tile_q4_1_decode(group, x0, K, y, n_rows);
  const int64_t nb = K / kQK;
  const __m256i m4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16), ones = _mm256_set1_epi16(1);
  const __m256i lane_bytes = _mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C, 0, 0x04040404, 0x08080808, 0x0C0C0C0C);
  // Decode streams ahead: SmolLM2 Q4_1 decode +12-18% on a Zen 3 (docs/PERFORMANCE.md). More tokens reuse each
  // record from L1 and are not memory-bound. (tile() above has none: on the Q8_0 output head it measured no gain.)
  constexpr bool kStreamAhead = kTokens == 1;
  NextGroupPrefetch ahead(group, nb * kRecord, nb * (n_rows > 8 ? 2 : 1));
  for (int half = 0; half < 2 && 8 * half < n_rows; ++half) {
    __m256 acc[kTokens], mins[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = mins[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* rec = group + b * kRecord;
      if constexpr (kStreamAhead) ahead.at(half * nb + b);
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * half)));
      __m256i lv[8];
      for (int c = 0; c < 4; ++c) {
        const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kQsAt + 64 * c + 32 * half));
        lv[2 * c] = _mm256_and_si256(bytes, m4);
        lv[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
      }
      if constexpr (kFiveBits) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kQhAt + 32 * half));
        for (int i = 0; i < 8; ++i) {
          const int e = x_offset_nibbles(i), o = e % 8;
          const __m256i bytes = _mm256_shuffle_epi8(qh, _mm256_add_epi8(lane_bytes, _mm256_set1_epi8(static_cast<char>(e / 8))));
          const __m256i bits = _mm256_set1_epi32(static_cast<int>((1u << o) | (2u << (o + 8)) | (4u << (o + 16)) | (8u << (o + 24))));
          const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bits), bits);
          lv[i] = _mm256_or_si256(lv[i], _mm256_and_si256(set, sixteen));
        }
      }
      [[maybe_unused]] __m256 mw;
      if constexpr (kMin) mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + kMinAt + 16 * half)));
      for (int t = 0; t < kTokens; ++t) {
        const uint8_t* xrow = x0 + t * x_stride;
        const int8_t* q;
        float dx;
        __m256i sum;
        if constexpr (kMin) {
          const BlockQ8_1& xb = reinterpret_cast<const BlockQ8_1*>(xrow)[b];
          q = xb.qs;
          dx = _cvtsh_ss(xb.d);
          sum = _mm256_setzero_si256();
        } else {
          const TokenRow row(xrow, K);
          q = row.qs(b);
          dx = row.scale(b);
          sum = _mm256_set1_epi32(-16 * row.block_sum(b));
        }
        constexpr int kRun = kFiveBits ? 4 : 8;
        for (int run = 0; run < 8; run += kRun) {
          __m256i s16 = _mm256_maddubs_epi16(lv[run], broadcast4(q + x_offset_nibbles(run)));
          for (int i = run + 1; i < run + kRun; ++i)
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lv[i], broadcast4(q + x_offset_nibbles(i))));
          sum = _mm256_add_epi32(sum, _mm256_madd_epi16(s16, ones));
        }
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(dx)), acc[t]);
        if constexpr (kMin) {
          const float sx = _cvtsh_ss(reinterpret_cast<const BlockQ8_1*>(xrow)[b].s);
          mins[t] = _mm256_add_ps(mins[t], _mm256_mul_ps(mw, _mm256_set1_ps(sx)));
        }
      }
    }
    if constexpr (kMin)
      for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_add_ps(acc[t], mins[t]);
    store_rows(acc, y + 8 * half, y_stride, n_rows - 8 * half);
  }
}

// Q4_K (and Q5_K) against Q8_K, 8 rows at a time (record: quant_dot_packed_avx512.cpp's tile_q45_k). Per
// sub-block and token, maddubs of levels and broadcast activations sum in int16: Q4_K's 8 at once (at most
// 8 * 2 * 15 * 128 < 32767), Q5_K's in two runs of 4 (levels up to 31: 4 * 2 * 31 * 128 < 32767); one madd with
// (sc, sc) pairs per run gives sc * sum exactly; the mins' sum is 4 madd of (m_2i, m_2i+1) pairs. Then k_with_min's
// operations in every lane.
template <bool kFiveBits, int kTokens>
void tile_q45_k(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                int n_rows) {
  constexpr size_t kRecord = kPackRows * (kFiveBits ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
  const int64_t nb = K / kQK_K;
  const __m256i m4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  for (int half = 0; half < 2 && 8 * half < n_rows; ++half) {
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* rec = group + b * kRecord;
      if (half == 0) prefetch_ahead<kRecord>(rec);
      const BlockQ8_K* x[kTokens];
      for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
      const Q4_KScales scales(rec + 64);
      const uint8_t* qh = rec + 256 + 32 * half;
      const uint8_t* qs = rec + 256 + (kFiveBits ? 512 : 0) + 32 * half;
      __m256i sumi[kTokens];
      for (int t = 0; t < kTokens; ++t) sumi[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        __m256i lv[8];
        for (int k = 0; k < 8; ++k) {
          const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * (8 * (j / 2) + k)));
          lv[k] = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(bytes, 4) : bytes, m4);
          if constexpr (kFiveBits) {  // bit j of each qh byte to bit 4 (the shift stays inside each byte)
            const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 64 * k));
            const __m256i at4 = j < 4 ? _mm256_slli_epi16(h, 4 - j) : _mm256_srli_epi16(h, j - 4);
            lv[k] = _mm256_or_si256(lv[k], _mm256_and_si256(at4, bit4));
          }
        }
        const __m256i sc = _mm256_cvtepu8_epi16(scales.scale_pairs(j, half));
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* q = x[t]->qs + 32 * j;
          if constexpr (kFiveBits) {
            for (int run = 0; run < 2; ++run) {
              __m256i s16 = _mm256_maddubs_epi16(lv[4 * run], broadcast4(q + 16 * run));
              for (int k = 1; k < 4; ++k)
                s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lv[4 * run + k], broadcast4(q + 16 * run + 4 * k)));
              sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(s16, sc));
            }
          } else {
            __m256i s16 = _mm256_maddubs_epi16(lv[0], broadcast4(q));
            for (int k = 1; k < 8; ++k) s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lv[k], broadcast4(q + 4 * k)));
            sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(s16, sc));
          }
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * half)));
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 32 + 16 * half)));
      __m256i mins[4];
      for (int i = 0; i < 4; ++i) mins[i] = _mm256_cvtepu8_epi16(scales.min_pairs(i, half));
      for (int t = 0; t < kTokens; ++t) {
        const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums)),
                                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[t]->bsums + 8)));
        alignas(16) int32_t pair[4];  // (bsum32_2i, bsum32_2i+1) as int16 pairs
        _mm_store_si128(reinterpret_cast<__m128i*>(pair), pairs);
        __m256i summ = _mm256_madd_epi16(mins[0], _mm256_set1_epi32(pair[0]));
        for (int i = 1; i < 4; ++i) summ = _mm256_add_epi32(summ, _mm256_madd_epi16(mins[i], _mm256_set1_epi32(pair[i])));
        const __m256 dx = _mm256_set1_ps(x[t]->d);
        const __m256 with_scale =
            _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(sumi[t])));
        acc[t] = _mm256_sub_ps(with_scale, _mm256_mul_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(summ)));
      }
    }
    store_rows(acc, y + 8 * half, y_stride, n_rows - 8 * half);
  }
}

// Q2_K and Q3_K against Q8_K, 8 rows at a time (records: quant_dot_packed_avx512.cpp's tile_q23_k). Per group
// (16 elements) and token, maddubs of the unsigned levels v (<= 7) and broadcast activations sum 4 vectors in int16
// (4 * 2 * 7 * 127 < 32767), and one madd with (sc, sc) int16 pairs gives sc * sum exactly, into sumi. Q3_K's levels
// are q + 4: its -4 sum_j sc_j bsum_j, and Q2_K's mins' sum, are 8 madd of (scale_2i, scale_2i+1) pairs with the
// activation sums. Then k_with_min's (Q2_K) or k_plain's (Q3_K) operations in every lane.
template <bool kQ3, int kTokens>
void tile_q23_k(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                int n_rows) {
  constexpr size_t kRecord = kPackRows * (kQ3 ? sizeof(BlockQ3_K) : sizeof(BlockQ2_K));
  constexpr size_t kScalesAt = kQ3 ? 1568 : 64, kQsAt = kQ3 ? 544 : 320, kHmaskAt = 32;
  const int64_t nb = K / kQK_K;
  const __m256i two_bits = _mm256_set1_epi8(3), one_bit = _mm256_set1_epi8(1);
  for (int half = 0; half < 2 && 8 * half < n_rows; ++half) {
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* rec = group + b * kRecord;
      if (half == 0) prefetch_ahead<kRecord>(rec);
      const BlockQ8_K* x[kTokens];
      for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
      __m128i sc8[16];  // 16 rows' scale (Q2_K: its low nibble; Q3_K: signed) of group j, one byte per row
      __m128i other8[16];  // Q2_K: the mins (high nibbles); Q3_K: the scales again
      const uint8_t* scales = rec + kScalesAt;
      for (int j = 0; j < 16; ++j) {
        if constexpr (kQ3) {
          sc8[j] = other8[j] = q3_k_scales(scales, j);
        } else {
          const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * j));
          sc8[j] = _mm_and_si128(v, _mm_set1_epi8(0x0F));
          other8[j] = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F));
        }
      }
      // 8 rows' (a, a) int16 pairs of group j's scale, for madd; rows 8 half ..
      auto scale_pairs = [&](int j) {
        const __m128i v = half ? _mm_unpackhi_epi8(sc8[j], sc8[j]) : _mm_unpacklo_epi8(sc8[j], sc8[j]);
        return kQ3 ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
      };
      __m256i sumi[kTokens];
      for (int t = 0; t < kTokens; ++t) sumi[t] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h)
        for (int g = 0; g < 2; ++g) {
          __m256i units[4], high[4];
          for (int k = 0; k < 4; ++k) {
            units[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kQsAt + 64 * (8 * h + 4 * g + k) + 32 * half));
            if constexpr (kQ3)
              high[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kHmaskAt + 64 * (4 * g + k) + 32 * half));
          }
          for (int f = 0; f < 4; ++f) {
            const int j = 8 * h + 2 * f + g;
            __m256i lv[4];
            for (int k = 0; k < 4; ++k) {
              lv[k] = _mm256_and_si256(_mm256_srli_epi16(units[k], 2 * f), two_bits);
              if constexpr (kQ3)
                lv[k] = _mm256_or_si256(lv[k], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(high[k], 4 * h + f), one_bit), 2));
            }
            const __m256i sc = scale_pairs(j);
            for (int t = 0; t < kTokens; ++t) {
              const int8_t* q = x[t]->qs + 16 * j;
              __m256i s16 = _mm256_maddubs_epi16(lv[0], broadcast4(q));
              for (int k = 1; k < 4; ++k) s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lv[k], broadcast4(q + 4 * k)));
              sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(s16, sc));
            }
          }
        }
      __m256i pairs[8];  // rows 8 half ..: (other_2i, other_2i+1) as int16
      for (int i = 0; i < 8; ++i) {
        const __m128i v = half ? _mm_unpackhi_epi8(other8[2 * i], other8[2 * i + 1]) : _mm_unpacklo_epi8(other8[2 * i], other8[2 * i + 1]);
        pairs[i] = kQ3 ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * half)));
      for (int t = 0; t < kTokens; ++t) {
        __m256i other = _mm256_madd_epi16(pairs[0], _mm256_set1_epi32(load_i32(x[t]->bsums)));
        for (int i = 1; i < 8; ++i) other = _mm256_add_epi32(other, _mm256_madd_epi16(pairs[i], _mm256_set1_epi32(load_i32(x[t]->bsums + 2 * i))));
        const __m256 dx = _mm256_set1_ps(x[t]->d);
        if constexpr (kQ3) {
          const __m256i total = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(other, 2));  // sum sc (v - 4) x
          acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(total)));
        } else {
          const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 32 + 16 * half)));
          const __m256 with_scale = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(sumi[t])));
          acc[t] = _mm256_sub_ps(with_scale, _mm256_mul_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(other)));
        }
      }
    }
    store_rows(acc, y + 8 * half, y_stride, n_rows - 8 * half);
  }
}

// IQ4_XS against Q8_K, 8 rows at a time (record: quant_dot_packed_avx512.cpp's tile_iq4_xs). The table's signed
// levels v meet the activations through maddubs(|v|, x * sign(v)) (pairs <= 2 * 128 * 127; Q8_K's activations are
// within +-127), and one madd per vector with the row's signed scale ls - 32 as (sc, sc) int16 pairs gives sc * sum
// exactly. Then k_plain's operations in every lane.
template <int kTokens>
void tile_iq4_xs(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                 int n_rows) {
  constexpr size_t kRecord = kPackRows * sizeof(BlockIQ4_XS);
  const int64_t nb = K / kQK_K;
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m128i t16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
  const __m256i table = _mm256_set_m128i(t16, t16);
  for (int half = 0; half < 2 && 8 * half < n_rows; ++half) {
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* rec = group + b * kRecord;
      if (half == 0) prefetch_ahead<kRecord>(rec);
      const BlockQ8_K* x[kTokens];
      for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
      const __m256i scales_h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 32 + 16 * half)));
      const uint8_t* qs = rec + 128 + 32 * half;
      __m256i sumi[kTokens];
      for (int t = 0; t < kTokens; ++t) sumi[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rec + 64 + 16 * (j / 2) + 8 * half)));
        const __m256i ls = _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi32(low, 4 * (j % 2)), _mm256_set1_epi32(0xF)),
            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(scales_h, 2 * j), _mm256_set1_epi32(3)), 4));
        const __m256i sc32 = _mm256_sub_epi32(ls, _mm256_set1_epi32(32));
        // (sc, sc) int16 pairs: the low 16 bits of each lane copied to its high 16 bits.
        const __m256i sc = _mm256_or_si256(_mm256_and_si256(sc32, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(sc32, 16));
        __m256i lv[8], mag[8];
        for (int c = 0; c < 4; ++c) {
          const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * (4 * j + c)));
          lv[2 * c] = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, m4));
          lv[2 * c + 1] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4));
        }
        for (int i = 0; i < 8; ++i) mag[i] = _mm256_abs_epi8(lv[i]);
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* q = x[t]->qs + 32 * j;
          for (int i = 0; i < 8; ++i)
            sumi[t] = _mm256_add_epi32(
                sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(mag[i], _mm256_sign_epi8(broadcast4(q + x_offset_nibbles(i)), lv[i])), sc));
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * half)));
      for (int t = 0; t < kTokens; ++t)
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(x[t]->d)), _mm256_cvtepi32_ps(sumi[t])));
    }
    store_rows(acc, y + 8 * half, y_stride, n_rows - 8 * half);
  }
}

// Q6_K against Q8_K, 8 rows at a time (record: quant_dot_packed_avx512.cpp's tile_q6_k). Levels q in 0..63: two
// maddubs sum in int16 (at most 2 * 2 * 63 * 127 < 32767), a madd with (sc, sc) pairs gives sc * sum q x; the
// offset -32 * sum_s sc_s * bsum_s is 8 madd of (sc_2i, sc_2i+1) pairs. Then k_plain's operations in every lane.
template <int kTokens>
void tile_q6_k(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
               int n_rows) {
  constexpr size_t kRecord = kPackRows * sizeof(BlockQ6_K);
  const int64_t nb = K / kQK_K;
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  auto load = [](const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  // Rows 8 half ..: the signed bytes of v as int16 pairs (v_r, v_r) (pair = false: v's rows with w's, (v_r, w_r)).
  auto pairs16 = [](__m128i v, __m128i w, int half) {
    return _mm256_cvtepi8_epi16(half ? _mm_unpackhi_epi8(v, w) : _mm_unpacklo_epi8(v, w));
  };
  for (int half = 0; half < 2 && 8 * half < n_rows; ++half) {
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* rec = group + b * kRecord;
      if (half == 0) prefetch_ahead<kRecord>(rec);
      const uint8_t* scales = rec + 32;
      const uint8_t* ql = rec + 32 + 256 + 32 * half;
      const uint8_t* qh = ql + 2048;
      const BlockQ8_K* x[kTokens];
      for (int t = 0; t < kTokens; ++t) x[t] = reinterpret_cast<const BlockQ8_K*>(x0 + t * x_stride) + b;
      auto scale_row = [&](int s) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * s)); };
      __m256i sumi[kTokens];
      for (int t = 0; t < kTokens; ++t) sumi[t] = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h)
        for (int kh = 0; kh < 2; ++kh)
          for (int f = 0; f < 4; ++f) {
            __m256i lv[4];
            for (int kk = 0; kk < 4; ++kk) {
              const int k = 4 * kh + kk;
              const __m256i low = load(ql + 64 * (16 * h + 8 * (f % 2) + k));
              const __m256i high = load(qh + 64 * (8 * h + k));
              const __m256i lo = _mm256_and_si256(f < 2 ? low : _mm256_srli_epi16(low, 4), low4);
              const __m256i hi = f == 0   ? _mm256_slli_epi16(high, 4)
                                 : f == 1 ? _mm256_slli_epi16(high, 2)
                                 : f == 2 ? high
                                          : _mm256_srli_epi16(high, 2);
              lv[kk] = _mm256_or_si256(lo, _mm256_and_si256(hi, bits45));
            }
            const int s = 8 * h + 2 * f + kh;
            const __m256i sc = pairs16(scale_row(s), scale_row(s), half);
            for (int t = 0; t < kTokens; ++t) {
              const int8_t* q = x[t]->qs + 16 * s;
              const __m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(lv[0], broadcast4(q)),
                                                 _mm256_maddubs_epi16(lv[1], broadcast4(q + 4)));
              const __m256i c = _mm256_add_epi16(_mm256_maddubs_epi16(lv[2], broadcast4(q + 8)),
                                                 _mm256_maddubs_epi16(lv[3], broadcast4(q + 12)));
              sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(_mm256_madd_epi16(a, sc), _mm256_madd_epi16(c, sc)));
            }
          }
      for (int i = 0; i < 8; ++i) {  // - 32 * (sc_2i bsum_2i + sc_2i+1 bsum_2i+1)
        const __m256i sc = pairs16(scale_row(2 * i), scale_row(2 * i + 1), half);
        for (int t = 0; t < kTokens; ++t) {
          const __m256i offset = _mm256_madd_epi16(sc, _mm256_set1_epi32(load_i32(x[t]->bsums + 2 * i)));
          sumi[t] = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(offset, 5));
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 16 * half)));
      for (int t = 0; t < kTokens; ++t)
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(x[t]->d)), _mm256_cvtepi32_ps(sumi[t])));
    }
    store_rows(acc, y + 8 * half, y_stride, n_rows - 8 * half);
  }
}

constexpr int kMaxTokens = 4;

template <class Half>
struct Tile32 {
  template <int kTokens>
  struct Of {
    static void run(const uint8_t* g, const uint8_t* x0, size_t xs, int64_t K, float* y, int64_t ys, int n_rows) {
      tile<Half, kTokens>(g, x0, xs, K, y, ys, n_rows);
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

PackedKernels packed_kernels_avx2(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return {tile_any<Tile32<SignedHalf<0>>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::Q4_0: return {tile_any<Tile32<Q4_0Half>::Of, kMaxTokens>, kMaxTokens};
    case GgmlType::IQ4_NL: return {tile_any<Tile32<SignedHalf<1>>::Of, kMaxTokens>, kMaxTokens};
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
