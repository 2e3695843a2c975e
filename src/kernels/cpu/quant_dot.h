// Matmuls on quantized weights the way the formats are meant to be used: each activation row is quantized once
// per matmul (Q8_0 blocks for most 32-element types, Q8_1 for Q4_1 / Q5_1, Q8_K super-blocks for the K-quants and
// IQ4_XS), and each (weight row, activation row) pair is an integer dot product per block.
//
// The exact arithmetic (docs/kernels.md, "Quantized weights"): per block, integer sums that are exact in int32
// (sum_i q_w * q_x, scaled by the block's integer sub-scales; for types with mins also sum_j m_j * bsum_j), then
// float updates in block order with the formulas of quant_dot_combine.h (one running sum per row, and for Q4_1 /
// Q5_1 the mins' running sum beside it). The SIMD builds, row-major or packed
// (quant_dot_packed.h), compute the same integers (in any order: integers are exact) and the same float operations,
// so every build gives the same bits, for any batch, thread count or ISA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "io/ggml_type.h"
#include "kernels/cpu_features.h"

namespace pagoda {

enum class ActivationFormat { kQ8_0, kQ8_1, kQ8_K };

// Whether matmuls on this weight type go through the integer dot products (every supported quantized type).
bool uses_integer_dot(GgmlType weight);
ActivationFormat activation_format(GgmlType weight);
// Bytes of one quantized activation row of K elements (K a multiple of the format's block). A Q8_0 row is its
// nb = K / 32 blocks followed by what the SIMD dots need once per token, not once per weight row (all unaligned):
// [nb][8] int32 lane sums (each block's sums of elements 4j .. 4j + 3), [nb] int32 block sums (of all 32), and
// [nb] f32 scales (each block's d as f32).
size_t activation_row_bytes(ActivationFormat f, int64_t K);
struct Q8_0Row {
  uint8_t* lane_sums;   // [nb][8] int32
  uint8_t* block_sums;  // [nb] int32
  uint8_t* scales;      // [nb] f32
};
inline Q8_0Row q8_0_row(uint8_t* row, int64_t K) {
  const int64_t nb = K / 32;
  uint8_t* lane_sums = row + nb * 34;
  return {lane_sums, lane_sums + nb * 32, lane_sums + nb * 36};
}
// x [K] -> out [activation_row_bytes(f, K)].
void quantize_activations(ActivationFormat f, const float* x, int64_t K, uint8_t* out);

// dot(weight row of K elements, quantized activation row of K elements).
using QuantDotFn = float (*)(const uint8_t* w_row, const uint8_t* x_row, int64_t K);
QuantDotFn quant_dot_portable(GgmlType weight);
// Several dots at once: rows w0 + r * w_stride (r < tile_rows) against activation rows x0 + t * x_stride
// (t < tile_tokens), into y[t * y_stride + r]; bitwise the same values as the single dots.
using QuantTileFn = void (*)(const uint8_t* w0, size_t w_stride, const uint8_t* x0, size_t x_stride, int64_t K,
                             float* y, int64_t y_stride);
// x [K] -> one quantized activation row (bitwise quantize_activations for the weight type's format).
using ActivationQuantFn = void (*)(const float* x, int64_t K, uint8_t* out);
struct QuantKernels {
  QuantDotFn dot = nullptr;
  ActivationQuantFn quantize = nullptr;  // never nullptr from quant_kernels()
  QuantTileFn tile = nullptr;  // nullptr: dots only
  int tile_rows = 0, tile_tokens = 0;
  // Decode: one activation row prepared once for many weight rows (prepared_bytes(K) bytes, 64-byte aligned), then
  // dots against it; bitwise `dot`. nullptr where a build has none.
  size_t (*prepared_bytes)(int64_t K) = nullptr;
  void (*prepare)(const uint8_t* x_row, int64_t K, uint8_t* prepared) = nullptr;
  QuantDotFn dot_prepared = nullptr;
};
// The SIMD builds; nullptr / no tile where a type has no SIMD code (its portable code then runs).
QuantDotFn quant_dot_avx2(GgmlType weight);
QuantDotFn quant_dot_avx512(GgmlType weight);  // AVX-512 VNNI on 256-bit vectors; needs avx512_vnni
QuantKernels quant_kernels_avx2(GgmlType weight);
QuantKernels quant_kernels_avx512(GgmlType weight);
// The kernels for `isa` (the process's kernel set in matmul), falling back to narrower builds for types they lack.
QuantKernels quant_kernels(GgmlType weight, KernelIsa isa);
inline QuantDotFn quant_dot(GgmlType weight, KernelIsa isa) { return quant_kernels(weight, isa).dot; }

}  // namespace pagoda
