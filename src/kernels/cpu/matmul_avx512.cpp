// AVX-512 matmul. Register tile: up to 4 tokens x 4 weight rows = 16 accumulators of 16 lanes. Each output
// element is one accumulator that walks k in steps of 16 from 0 to K (a masked step for the tail), then one
// horizontal sum: the same order for any tile shape, so results do not depend on batch composition.
// GCC 12's own avx512fintrin.h trips -Wuninitialized through _mm512_undefined_* (GCC bug 105593, fixed in
// GCC 13); the warning is about the compiler's header, not this code.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <array>
#include <utility>

#include "kernels/cpu/matmul.h"

namespace pagoda::kernels {
namespace {

#ifndef PAGODA_TILE_TOKENS
#define PAGODA_TILE_TOKENS 4
#define PAGODA_TILE_ROWS 4
#endif
constexpr int kTileTokens = PAGODA_TILE_TOKENS;
constexpr int kTileRows = PAGODA_TILE_ROWS;
constexpr int kDecodeTileRows = 8;
// Tokens are processed in chunks so the activations of a chunk stay in L2 while weight rows stream past.
constexpr int64_t kTokenChunk = 64;

// Loads 16 weights of a row starting at element k (k % 16 == 0), as f32; lanes outside `mask` are zero.
template <GgmlType kType>
inline __attribute__((always_inline)) __m512 load_weights(const uint8_t* row, int64_t k, __mmask16 mask) {
  if constexpr (kType == GgmlType::F32) {
    return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + k);
  } else if constexpr (kType == GgmlType::F16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + k));
  } else if constexpr (kType == GgmlType::BF16) {
    const __m256i h = _mm256_maskz_loadu_epi16(mask, reinterpret_cast<const uint16_t*>(row) + k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    static_assert(kType == GgmlType::Q8_0);
    // Rows of Q8_0 are whole blocks of 32, so the mask is always full here.
    const auto* block = reinterpret_cast<const BlockQ8_0*>(row) + k / kQ8_0BlockElems;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block->q + (k % kQ8_0BlockElems)));
    const __m512 values = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
    const float scale = _cvtsh_ss(block->scale_f16);
    return _mm512_mul_ps(values, _mm512_set1_ps(scale));
  }
}

// y[t, r] for t < kTokens, r < kRows of one tile.
// w0: first weight row; x: [kTokens, K] (stride K); y: row stride y_stride.
template <GgmlType kType, int kTokens, int kRows>
inline __attribute__((always_inline)) void tile_step(__m512 (&acc)[kTokens][kRows], const uint8_t* w0, size_t row_bytes,
                                                     const float* x, int64_t K, int64_t k, __mmask16 mask) {
  __m512 wv[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) wv[r] = load_weights<kType>(w0 + r * row_bytes, k, mask);
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) {
    const __m512 xv = _mm512_maskz_loadu_ps(mask, x + t * K + k);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[t][r] = _mm512_fmadd_ps(xv, wv[r], acc[t][r]);
  }
}

// y[t, r] for t < kTokens, r < kRows of one tile.
// w0: first weight row; x: [kTokens, K] (stride K); y: row stride y_stride.
template <GgmlType kType, int kTokens, int kRows>
void tile(const uint8_t* w0, size_t row_bytes, const float* x, int64_t K, float* y, int64_t y_stride) {
  __m512 acc[kTokens][kRows];
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[t][r] = _mm512_setzero_ps();

  const int64_t k_full = K / 16 * 16;
  for (int64_t k = 0; k < k_full; k += 16) tile_step<kType, kTokens, kRows>(acc, w0, row_bytes, x, K, k, 0xffff);
  if (k_full < K)
    tile_step<kType, kTokens, kRows>(acc, w0, row_bytes, x, K, k_full, static_cast<__mmask16>((1u << (K - k_full)) - 1));

#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) y[t * y_stride + r] = _mm512_reduce_add_ps(acc[t][r]);
}

using TileFn = void (*)(const uint8_t*, size_t, const float*, int64_t, float*, int64_t);

// tile_table<kType>()[tokens - 1][rows - 1] is the tile kernel for that shape.
template <GgmlType kType, int kTokens, int... kRowsMinus1>
constexpr std::array<TileFn, sizeof...(kRowsMinus1)> row_table(std::integer_sequence<int, kRowsMinus1...>) {
  return {&tile<kType, kTokens, kRowsMinus1 + 1>...};
}
template <GgmlType kType, int... kTokensMinus1>
constexpr auto tile_table(std::integer_sequence<int, kTokensMinus1...>) {
  return std::array{row_table<kType, kTokensMinus1 + 1>(std::make_integer_sequence<int, kTileRows>{})...};
}
template <GgmlType kType>
constexpr auto kTiles = tile_table<kType>(std::make_integer_sequence<int, kTileTokens>{});
template <GgmlType kType>
constexpr auto kDecodeTiles = row_table<kType, 1>(std::make_integer_sequence<int, kDecodeTileRows>{});

template <GgmlType kType>
void matmul_rows(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  const int64_t K = w.cols;
  if (num_tokens == 1) {
    // Decode: one token streams every weight row from memory once; 8 rows at a time keep more loads in
    // flight. The per-element reduction is the same as in the batched tiles.
    for (int64_t r = row_begin; r < row_end; r += kDecodeTileRows) {
      const int64_t rows = row_end - r < kDecodeTileRows ? row_end - r : kDecodeTileRows;
      kDecodeTiles<kType>[rows - 1](w.row(r), w.row_bytes, x, K, y + r, w.rows);
    }
    return;
  }
  for (int64_t t0 = 0; t0 < num_tokens; t0 += kTokenChunk) {
    const int64_t t_end = t0 + kTokenChunk < num_tokens ? t0 + kTokenChunk : num_tokens;
    for (int64_t r = row_begin; r < row_end; r += kTileRows) {
      const int rows = static_cast<int>(row_end - r < kTileRows ? row_end - r : kTileRows);
      for (int64_t t = t0; t < t_end; t += kTileTokens) {
        const int tokens = static_cast<int>(t_end - t < kTileTokens ? t_end - t : kTileTokens);
        const float* xt = x + t * K;
        float* yt = y + t * w.rows + r;
        kTiles<kType>[tokens - 1][rows - 1](w.row(r), w.row_bytes, xt, K, yt, w.rows);
      }
    }
  }
}

}  // namespace

void matmul_rows_avx512(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                        int64_t row_end) {
  switch (w.type) {
    case GgmlType::F32: return matmul_rows<GgmlType::F32>(w, x, num_tokens, y, row_begin, row_end);
    case GgmlType::F16: return matmul_rows<GgmlType::F16>(w, x, num_tokens, y, row_begin, row_end);
    case GgmlType::BF16: return matmul_rows<GgmlType::BF16>(w, x, num_tokens, y, row_begin, row_end);
    case GgmlType::Q8_0: return matmul_rows<GgmlType::Q8_0>(w, x, num_tokens, y, row_begin, row_end);
    default: return matmul_rows_scalar(w, x, num_tokens, y, row_begin, row_end);
  }
}

}  // namespace pagoda::kernels
