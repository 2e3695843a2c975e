// y = x W^T on the GPU for the forward pass: x [T, K] f32, W [N, K] in its file type (f32, f16 or bf16), y [T, N]
// f32 (+ bias [N] when given).
//
// One warp per (output row n, tile of up to 8 tokens): each lane walks its chunks of the row (8 values = 16 or 32
// bytes, chunk c = lane, lane + 32, ...; single values when K is not a multiple of 8), converts them once and
// multiplies them into each token's running sum (fma, in chunk order), then the 32 lanes' sums are added by a
// butterfly. The order of a (token, row) sum depends only on K, never on T or on the tile, so every token's output
// is bitwise the same in any batch. The 8 tiles of a row run next to each other (the tile is the grid's fastest
// index), so a batched decode reads the weights from memory about once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_forward.h"

namespace pagoda::cuda {

constexpr int kMatmulTokenTile = 8;

cudaError_t matmul(const float* x, int64_t T, const void* w, CudaWeightType type, int64_t N, int64_t K,
                   size_t row_bytes, const float* bias, float* y, cudaStream_t stream);

}  // namespace pagoda::cuda
