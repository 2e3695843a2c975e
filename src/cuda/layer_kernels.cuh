// The row-wise kernels of the GPU forward pass (cuda_forward.cu): each computes a token's row (or a head's) alone, in
// a fixed order, with the CPU kernels' formulas (kernels/cpu/rms_norm.cpp, rope.cpp, activations.cpp, kv_store.h).
// Launchers take device pointers and enqueue on `stream`; they return the launch's error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_forward.h"
#include "kv/kv_dtype.h"

namespace pagoda::cuda {

// x[t] = row tokens[t] of the embedding table (f32, f16 or bf16), as f32. x: [T, n].
cudaError_t embed_rows(const void* table, CudaWeightType type, size_t row_bytes, const int32_t* tokens, int64_t T,
                       int64_t n, float* x, cudaStream_t stream);

// out[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * weight, the mean of squares summed in double. rows x n; out may be x.
cudaError_t rms_norm_rows(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* out,
                          cudaStream_t stream);

// Rotary positions in place on x: [T, n_heads, head_dim], token t at positions[t]; theta_i = position *
// theta_scale^i built by repeated f32 multiplication (as the CPU kernel and ggml do).
cudaError_t rope_rows(float* x, const int32_t* positions, int64_t T, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                      float theta_scale, float freq_scale, bool neox, cudaStream_t stream);

// Stores K or V rows (src: [T, width] f32) at slot slots[t] of a layer: dst + slots[t] * width values of dtype,
// rounded to nearest even (f16, bf16).
cudaError_t store_kv_rows(const float* src, int64_t T, int64_t width, const int64_t* slots, KvDtype dtype, uint8_t* dst,
                          cudaStream_t stream);

// gate[i] = silu(gate[i]) * up[i].
cudaError_t silu_mul(float* gate, const float* up, int64_t n, cudaStream_t stream);
// x[i] += y[i].
cudaError_t add_in_place(float* x, const float* y, int64_t n, cudaStream_t stream);
// y[t] += b (rows of width n).
cudaError_t add_bias(float* y, const float* b, int64_t T, int64_t n, cudaStream_t stream);
// out[r] = x[rows[r]] (rows of width n).
cudaError_t gather_rows(const float* x, const int32_t* rows, int64_t count, int64_t n, float* out, cudaStream_t stream);

}  // namespace pagoda::cuda
