// Matrix multiply of activations by a weight matrix stored in its file type: y = x * W^T.
//
// Determinism contract (batch invariance): every output element y[t, r] is reduced over k in one fixed order
// that does not depend on num_tokens, on which other rows or tokens are computed alongside, or on the thread
// count. So a token's result is bitwise identical whether it is computed alone or inside a batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

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

// One thread's share of a matmul inside a pool.run region (model/transformer_team.h): the activations prepared
// (matmul_prepare_rows, by one thread or a share of the tokens each), then any rows, with bitwise the values matmul
// gives them.
struct MatmulInput {
  const float* x = nullptr;     // [num_tokens, cols] f32: what float weights read
  const uint8_t* xq = nullptr;  // [num_tokens, x_bytes] quantized for an integer-dot weight type, else nullptr
  size_t x_bytes = 0;
  int64_t num_tokens = 0;
};
// Bytes of one token's prepared row for w: 0 for float weights (they read x itself).
size_t matmul_input_row_bytes(const WeightMatrix& w);
// Prepares tokens [t_begin, t_end) of x into the same rows of xq ([*, matmul_input_row_bytes(w)]): threads that
// share one prepared input each prepare their own tokens (bitwise what matmul quantizes for them).
void matmul_prepare_rows(const WeightMatrix& w, const float* x, int64_t t_begin, int64_t t_end, uint8_t* xq);
// Columns per block of w's prepared input row when that row is nothing but blocks quantized independently (the
// Q8_1 and Q8_K formats), so that a range of whole blocks can be prepared on its own (matmul_prepare_cols); 0 for
// float weights and for Q8_0 rows (their lane sums, block sums and scales follow all the blocks).
int64_t matmul_input_block_cols(const WeightMatrix& w);
// Columns [col_begin, col_end) of one token's input x ([w.cols]; both multiples of matmul_input_block_cols(w) > 0)
// into their blocks of its prepared row xq ([matmul_input_row_bytes(w)]): bitwise those bytes of matmul_prepare_rows.
// Threads that each produced a range of x's columns prepare them where they are in cache.
void matmul_prepare_cols(const WeightMatrix& w, const float* x, int64_t col_begin, int64_t col_end, uint8_t* xq);
// Whether matmul gives each thread one contiguous range of rows for a batch of num_tokens tokens (small batches:
// they stream the weights from memory), rather than handing rows out dynamically (compute-bound batches).
bool matmul_splits_rows_statically(int64_t num_tokens);
// Whether an input prepared for `a` serves `b` too (same columns, same activation format).
bool matmul_shares_input(const WeightMatrix& a, const WeightMatrix& b);
// The rows w's kernels take at a time: row ranges given to matmul_rows start at a multiple of it.
int64_t matmul_row_granule(const WeightMatrix& w);
// y[t, r] for rows [row_begin, row_end) of w and every token of `in` (y: [num_tokens, w.rows]). row_begin is a
// multiple of matmul_row_granule(w), and so is row_end unless it is w.rows.
void matmul_rows(const WeightMatrix& w, const MatmulInput& in, float* y, int64_t row_begin, int64_t row_end);

// The bytes matmul_rows reads of w for rows [row_begin, row_end) (contiguous: packed groups or file rows).
std::span<const uint8_t> matmul_row_bytes(const WeightMatrix& w, int64_t row_begin, int64_t row_end);

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
