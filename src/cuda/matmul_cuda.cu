#include "cuda/matmul_cuda.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace pagoda::cuda {
namespace {

constexpr int kWarps = 4;  // rows per block
constexpr int kTile = kMatmulTokenTile;

struct F32W {
  static constexpr int kBytes = 4;
};
struct F16W {
  static constexpr int kBytes = 2;
};
struct BF16W {
  static constexpr int kBytes = 2;
};

// 8 consecutive weights at p (16-byte aligned) as f32.
__device__ __forceinline__ void load_chunk(F32W, const uint8_t* p, float (&w)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p)), b = __ldg(reinterpret_cast<const float4*>(p) + 1);
  w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
}
__device__ __forceinline__ void load_chunk(F16W, const uint8_t* p, float (&w)[8]) {
  const uint4 r = __ldg(reinterpret_cast<const uint4*>(p));
  const uint32_t u[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&u[i]));
    w[2 * i] = f.x, w[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void load_chunk(BF16W, const uint8_t* p, float (&w)[8]) {
  const uint4 r = __ldg(reinterpret_cast<const uint4*>(p));
  const uint32_t u[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[2 * i] = __uint_as_float(u[i] << 16);
    w[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ float load_one(F32W, const uint8_t* row, int64_t k) {
  return reinterpret_cast<const float*>(row)[k];
}
__device__ __forceinline__ float load_one(F16W, const uint8_t* row, int64_t k) {
  return __half2float(reinterpret_cast<const __half*>(row)[k]);
}
__device__ __forceinline__ float load_one(BF16W, const uint8_t* row, int64_t k) {
  return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[k]);
}

// kChunks: K % 8 == 0 and rows 16-byte aligned (8-value chunks); otherwise one value at a time.
template <class WT, bool kChunks>
__global__ void __launch_bounds__(kWarps * 32) matmul_kernel(const float* __restrict__ x, int64_t T,
                                                              const uint8_t* __restrict__ w, int64_t N, int64_t K,
                                                              size_t row_bytes, const float* __restrict__ bias,
                                                              float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t n = static_cast<int64_t>(blockIdx.y) * kWarps + threadIdx.x / 32;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kTile;
  if (n >= N) return;
  const int tiles = static_cast<int>(T - t0 < kTile ? T - t0 : kTile);
  const uint8_t* row = w + n * row_bytes;
  float acc[kTile];
#pragma unroll
  for (int i = 0; i < kTile; ++i) acc[i] = 0.0f;
  if constexpr (kChunks) {
    const int64_t chunks = K / 8;
#pragma unroll 2
    for (int64_t c = lane; c < chunks; c += 32) {
      float wv[8];
      load_chunk(WT{}, row + c * 8 * WT::kBytes, wv);
#pragma unroll
      for (int i = 0; i < kTile; ++i) {
        if (i < tiles) {
          const float4* xr = reinterpret_cast<const float4*>(x + (t0 + i) * K + c * 8);
          const float4 a = xr[0], b = xr[1];
          float s = acc[i];
          s = fmaf(wv[0], a.x, s), s = fmaf(wv[1], a.y, s), s = fmaf(wv[2], a.z, s), s = fmaf(wv[3], a.w, s);
          s = fmaf(wv[4], b.x, s), s = fmaf(wv[5], b.y, s), s = fmaf(wv[6], b.z, s), s = fmaf(wv[7], b.w, s);
          acc[i] = s;
        }
      }
    }
  } else {
    for (int64_t k = lane; k < K; k += 32) {
      const float wv = load_one(WT{}, row, k);
#pragma unroll
      for (int i = 0; i < kTile; ++i)
        if (i < tiles) acc[i] = fmaf(wv, x[(t0 + i) * K + k], acc[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < kTile; ++i) {
#pragma unroll
    for (int off = 16; off >= 1; off /= 2) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off);
  }
  if (lane == 0) {
    for (int i = 0; i < tiles; ++i) y[(t0 + i) * N + n] = bias ? acc[i] + bias[n] : acc[i];
  }
}

template <class WT>
cudaError_t launch(const float* x, int64_t T, const uint8_t* w, int64_t N, int64_t K, size_t row_bytes,
                   const float* bias, float* y, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((T + kTile - 1) / kTile), static_cast<unsigned>((N + kWarps - 1) / kWarps));
  if ((N + kWarps - 1) / kWarps > 65535) return cudaErrorInvalidConfiguration;  // the grid's y limit: N <= 262,140
  const bool chunks = K % 8 == 0 && row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  if (chunks)
    matmul_kernel<WT, true><<<grid, kWarps * 32, 0, stream>>>(x, T, w, N, K, row_bytes, bias, y);
  else
    matmul_kernel<WT, false><<<grid, kWarps * 32, 0, stream>>>(x, T, w, N, K, row_bytes, bias, y);
  return cudaGetLastError();
}

}  // namespace

cudaError_t matmul(const float* x, int64_t T, const void* w, CudaWeightType type, int64_t N, int64_t K,
                   size_t row_bytes, const float* bias, float* y, cudaStream_t stream) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  switch (type) {
    case CudaWeightType::kF16: return launch<F16W>(x, T, wb, N, K, row_bytes, bias, y, stream);
    case CudaWeightType::kBF16: return launch<BF16W>(x, T, wb, N, K, row_bytes, bias, y, stream);
    default: return launch<F32W>(x, T, wb, N, K, row_bytes, bias, y, stream);
  }
}

}  // namespace pagoda::cuda
