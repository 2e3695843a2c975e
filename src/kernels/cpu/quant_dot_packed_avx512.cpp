// Packed Q8_0 / Q4_0 / IQ4_NL against Q8_0 activations on AVX-512 VNNI: lane r of every zmm is row r of the group.
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
      for (int i = 0; i < 8; ++i) sum = _mm512_dpbusd_epi32(sum, lv[i], _mm512_set1_epi32(load_i32(q + Kind::x_offset(i))));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(row.scale(b))), acc[t]);
    }
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, valid, acc[t]);
}

constexpr int kMaxTokens = 8;

template <class Kind>
void tile_any(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
              int n_tokens, int n_rows) {
  switch (n_tokens) {
    case 1: return tile<Kind, 1>(group, x0, x_stride, K, y, y_stride, n_rows);
    case 2: return tile<Kind, 2>(group, x0, x_stride, K, y, y_stride, n_rows);
    case 3: return tile<Kind, 3>(group, x0, x_stride, K, y, y_stride, n_rows);
    case 4: return tile<Kind, 4>(group, x0, x_stride, K, y, y_stride, n_rows);
    case 5: return tile<Kind, 5>(group, x0, x_stride, K, y, y_stride, n_rows);
    case 6: return tile<Kind, 6>(group, x0, x_stride, K, y, y_stride, n_rows);
    case 7: return tile<Kind, 7>(group, x0, x_stride, K, y, y_stride, n_rows);
    default: return tile<Kind, kMaxTokens>(group, x0, x_stride, K, y, y_stride, n_rows);
  }
}

}  // namespace

PackedKernels packed_kernels_avx512(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return {tile_any<Q8_0Levels>, kMaxTokens};
    case GgmlType::Q4_0: return {tile_any<Q4_0Levels>, kMaxTokens};
    case GgmlType::IQ4_NL: return {tile_any<IQ4_NLLevels>, kMaxTokens};
    default: return {};
  }
}

}  // namespace pagoda
