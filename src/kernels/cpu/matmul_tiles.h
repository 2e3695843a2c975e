// The register-tiled matmul shared by the SIMD kernels, generic over an ISA traits type. Include it only from a
// translation unit compiled for that ISA. Everything here is a template on `Isa`, so the AVX-512 and AVX2 copies
// are distinct symbols (no ODR mix-up between files built with different -m flags).
//
// Isa provides:
//   using Vec;                              // kLanes floats
//   static constexpr int kLanes;
//   static constexpr int kTileTokens, kTileRows, kDecodeTileRows;   // prefill tiles, decode tile height
//   static constexpr int kSmallTileTokens, kSmallTileRows;          // tiles for small batches (< kSmallBatch)
//   static int64_t token_tile_bytes();                     // token tiles up to this size go tokens outer
//   static Vec zero();
//   static Vec load_x(const float* p, int n);              // n valid lanes (n == kLanes: full), rest zero
//   template <GgmlType T> static Vec load_w(const uint8_t* row, int64_t k, int n);  // elements k..k+n of a row
//   static Vec fma(Vec a, Vec b, Vec acc);                 // acc + a * b
//   static float reduce(Vec v);                            // fixed-order horizontal sum
//
// Determinism: each output element is one accumulator walking k in steps of kLanes (a partial step for the
// tail) and one reduce(), whatever the tile shape, so results are independent of batch composition.
#pragma once

#include "kernels/cpu/isa_namespace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/cpu/weight_matrix.h"

namespace pagoda::kernels::inline PAGODA_ISA_NAMESPACE::tiles {

// Tokens are processed in chunks so the activations of a chunk stay in L2 while weight rows stream past:
// kTokenChunk tokens, unless their activations exceed kChunkL2Bytes (rows longer than 3,072 at 64 tokens: an FFN's
// down projection); then as many whole tiles as fill half of that (at least two). Measured on Zen 5, F16, 512
// tokens, 2,048 x 5,632: 158-166 -> 171-184 GFLOP/s (AVX-512, 12 tokens), 107-109 -> 118-120 (AVX2, 16 tokens);
// shorter rows lose with smaller chunks (5,632 x 2,048 at 48 tokens: 194 -> 164), so they keep 64.
constexpr int64_t kTokenChunk = 64;
constexpr int64_t kChunkL2Bytes = int64_t{768} << 10;
template <int kTileTokens>
constexpr int64_t token_chunk(int64_t K) {
  const int64_t row_bytes = K * static_cast<int64_t>(sizeof(float));
  if (kTokenChunk * row_bytes <= kChunkL2Bytes) return kTokenChunk;
  const int64_t fit = kChunkL2Bytes / 2 / row_bytes / kTileTokens * kTileTokens;
  return fit < 2 * kTileTokens ? 2 * kTileTokens : fit;
}

// kPrefetch: fetch the next row tile's weights at the same k. Decode and small batches stream each row from memory
// once, so that pays (16-way F16 decode 477 -> 546 tok/s); a prefill tile reuses its rows from L1 for a whole token
// chunk, and the extra loads only compete with the activations' (AVX2 4 x 3 on Zen 3: 12% slower with them).
// Loop order. Rows outer (below): a row tile's weights stay in L1 while a chunk of tokens' activations streams from
// L2 (kTileTokens vectors per step). Tokens outer: a token tile's activations stay in L1 while the range's weight
// rows stream from L2 (kTileRows half-width vectors per step), which moves fewer bytes from L2 whenever the token
// tile fits in L1 and the range's rows in L2 (the dynamically scheduled row groups of a prefill).
// Isa::token_tile_bytes() is the largest token tile that goes tokens outer: half of a Zen 3 L1d for the AVX2 tiles
// (4 x 3), the CPU's whole L1d for the AVX-512 ones (6 x 4). Measured on Zen 5 (48 KiB L1d), 134M F16 prefill, in
// alternating runs: pp256 1,870 -> 2,048 tok/s (medians of 6); one 48-row range of 512 tokens, K = 2,048: 59 -> 85%
// of the FMA peak (docs/PERFORMANCE.md).
constexpr int64_t kRowRangeL2Bytes = int64_t{256} << 10;
template <class Isa, int kTileTokens>
inline bool tokens_outer(int64_t K, int64_t range_weight_bytes) {
  return kTileTokens * K * static_cast<int64_t>(sizeof(float)) <= Isa::token_tile_bytes() &&
         range_weight_bytes <= kRowRangeL2Bytes;
}

template <class Isa, GgmlType kType, int kTokens, int kRows, bool kPrefetch>
inline __attribute__((always_inline)) void tile_step(typename Isa::Vec (&acc)[kTokens][kRows], const uint8_t* w0,
                                                     size_t row_bytes, const float* x, int64_t K, int64_t k, int n) {
  typename Isa::Vec wv[kRows];
  if constexpr (kPrefetch) {
    // The tiles follow each other through the rows, so the next tile's rows start kRows rows on.
    const size_t at = static_cast<size_t>(k) * (row_bytes / static_cast<size_t>(K));
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r)
      __builtin_prefetch(w0 + (r + kRows) * row_bytes + at, 0, 3);
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) wv[r] = Isa::template load_w<kType>(w0 + r * row_bytes, k, n);
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) {
    const typename Isa::Vec xv = Isa::load_x(x + t * K + k, n);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) acc[t][r] = Isa::fma(xv, wv[r], acc[t][r]);
  }
}

// y[t, r] for t < kTokens, r < kRows. w0: first weight row; x: [kTokens, K] (stride K); y: row stride y_stride.
template <class Isa, GgmlType kType, int kTokens, int kRows, bool kPrefetch>
void tile(const uint8_t* w0, size_t row_bytes, const float* x, int64_t K, float* y, int64_t y_stride) {
  typename Isa::Vec acc[kTokens][kRows];
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t)
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) acc[t][r] = Isa::zero();
  constexpr int L = Isa::kLanes;
  const int64_t k_full = K / L * L;
  for (int64_t k = 0; k < k_full; k += L)
    tile_step<Isa, kType, kTokens, kRows, kPrefetch>(acc, w0, row_bytes, x, K, k, L);
  if (k_full < K)
    tile_step<Isa, kType, kTokens, kRows, kPrefetch>(acc, w0, row_bytes, x, K, k_full, static_cast<int>(K - k_full));
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t)
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) y[t * y_stride + r] = Isa::reduce(acc[t][r]);
}

using TileFn = void (*)(const uint8_t*, size_t, const float*, int64_t, float*, int64_t);

// row_table<...>()[rows - 1] and tile_table<...>()[tokens - 1][rows - 1]: the kernel for each tile shape.
template <class Isa, GgmlType kType, int kTokens, bool kPrefetch, int... kRowsMinus1>
constexpr std::array<TileFn, sizeof...(kRowsMinus1)> row_table(std::integer_sequence<int, kRowsMinus1...>) {
  return {&tile<Isa, kType, kTokens, kRowsMinus1 + 1, kPrefetch>...};
}
template <class Isa, GgmlType kType, int kMaxRows, bool kPrefetch, int... kTokensMinus1>
constexpr auto tile_table(std::integer_sequence<int, kTokensMinus1...>) {
  return std::array{
      row_table<Isa, kType, kTokensMinus1 + 1, kPrefetch>(std::make_integer_sequence<int, kMaxRows>{})...};
}
template <class Isa, GgmlType kType, int kMaxTokens, int kMaxRows, bool kPrefetch>
constexpr auto kTiles = tile_table<Isa, kType, kMaxRows, kPrefetch>(std::make_integer_sequence<int, kMaxTokens>{});
template <class Isa, GgmlType kType>
constexpr auto kDecodeTiles = row_table<Isa, kType, 1, true>(std::make_integer_sequence<int, Isa::kDecodeTileRows>{});

// Batches below this many tokens (decode steps of a few dozen sequences) use the small-batch tile shape.
constexpr int64_t kSmallBatch = 48;

template <class Isa, GgmlType kType, int kTileTokens, int kTileRows, bool kPrefetch>
void tiled_rows(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                int64_t row_end) {
  const int64_t K = w.cols;
  // The tile of tokens [t, t + tokens) and rows [r, r + rows): one call for both loop orders.
  auto run_tile = [&](int64_t t, int64_t tokens, int64_t r, int64_t rows) {
    kTiles<Isa, kType, kTileTokens, kTileRows, kPrefetch>[tokens - 1][rows - 1](w.row(r), w.row_bytes, x + t * K, K,
                                                                                y + t * w.rows + r, w.rows);
  };
  if (tokens_outer<Isa, kTileTokens>(K, (row_end - row_begin) * static_cast<int64_t>(w.row_bytes))) {
    for (int64_t t = 0; t < num_tokens; t += kTileTokens)
      for (int64_t r = row_begin; r < row_end; r += kTileRows)
        run_tile(t, std::min<int64_t>(num_tokens - t, kTileTokens), r, std::min<int64_t>(row_end - r, kTileRows));
    return;
  }
  const int64_t chunk = token_chunk<kTileTokens>(K);
  for (int64_t t0 = 0; t0 < num_tokens; t0 += chunk) {
    const int64_t t_end = std::min(t0 + chunk, num_tokens);
    for (int64_t r = row_begin; r < row_end; r += kTileRows)
      for (int64_t t = t0; t < t_end; t += kTileTokens)
        run_tile(t, std::min<int64_t>(t_end - t, kTileTokens), r, std::min<int64_t>(row_end - r, kTileRows));
  }
}

// Rows [row_begin, row_end) of y = x W^T for all tokens.
template <class Isa, GgmlType kType>
void matmul_rows(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  const int64_t K = w.cols;
  if (num_tokens == 1) {
    // Decode: one token streams every weight row from memory once; taller tiles keep more loads in flight.
    for (int64_t r = row_begin; r < row_end; r += Isa::kDecodeTileRows) {
      const int64_t rows = row_end - r < Isa::kDecodeTileRows ? row_end - r : Isa::kDecodeTileRows;
      kDecodeTiles<Isa, kType>[rows - 1](w.row(r), w.row_bytes, x, K, y + r, w.rows);
    }
    return;
  }
  // Any tile shape gives the same bits (one accumulator per output element); the shape is only about speed.
  if (num_tokens < kSmallBatch)
    return tiled_rows<Isa, kType, Isa::kSmallTileTokens, Isa::kSmallTileRows, true>(w, x, num_tokens, y, row_begin,
                                                                                    row_end);
  tiled_rows<Isa, kType, Isa::kTileTokens, Isa::kTileRows, false>(w, x, num_tokens, y, row_begin, row_end);
}

// Dispatches on the float weight types (quantized ones go through quant_dot.h); others fall back to `fallback`.
template <class Isa, class Fallback>
void matmul_rows_any(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                     int64_t row_end, Fallback fallback) {
  switch (w.type) {
    case GgmlType::F32: return matmul_rows<Isa, GgmlType::F32>(w, x, num_tokens, y, row_begin, row_end);
    case GgmlType::F16: return matmul_rows<Isa, GgmlType::F16>(w, x, num_tokens, y, row_begin, row_end);
    case GgmlType::BF16: return matmul_rows<Isa, GgmlType::BF16>(w, x, num_tokens, y, row_begin, row_end);
    default: return fallback(w, x, num_tokens, y, row_begin, row_end);
  }
}

}  // namespace pagoda::kernels::tiles
