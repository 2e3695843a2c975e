// Matrix multiply of activations by a weight matrix stored in its file type: y = x * W^T.
//
// Determinism contract (batch invariance): every output element y[t, r] is reduced over k in one fixed order
// that does not depend on num_tokens, on which other rows or tokens are computed alongside, or on the thread
// count. So a token's result is bitwise identical whether it is computed alone or inside a batch.
#pragma once

#include <cstdint>

#include "kernels/cpu/weight_matrix.h"
#include "util/thread_pool.h"

namespace pagoda {

// x: [num_tokens, w.cols] row stride w.cols; y: [num_tokens, w.rows] row stride w.rows.
void matmul(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool);

// Several matrices applied to the same input (Q, K and V; gate and up): y[i] = x * w[i]^T, with bitwise the values of
// separate matmul calls. Quantized weights of one activation format share one quantization of x and one parallel
// region over all their rows; anything else runs as separate matmul calls.
void matmul_many(const WeightMatrix* const* w, float* const* y, int n, const float* x, int64_t num_tokens,
                 ThreadPool& pool);

// Converts row r of w to f32: out [w.cols]. Used for embedding lookups.
void dequantize_row(const WeightMatrix& w, int64_t r, float* out);

// The instruction set the kernels dispatch to ("avx512", "avx2" or "portable"): PAGODA_ISA or the widest.
const char* matmul_isa_name();

namespace kernels {
// One ISA's implementation: computes rows [row_begin, row_end) of y for all tokens.
using MatmulRowsFn = void (*)(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                              int64_t row_end);
void matmul_rows_scalar(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                        int64_t row_end);
void matmul_rows_avx512(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                        int64_t row_end);
void matmul_rows_avx2(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                      int64_t row_end);
// Forces an ISA ("avx512", "avx2", "portable"; "scalar" is accepted for it) for tests and benchmarks; returns
// false if the CPU lacks it.
bool force_matmul_isa(const char* name);
}  // namespace kernels

}  // namespace pagoda
