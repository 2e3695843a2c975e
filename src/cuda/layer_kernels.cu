#include "cuda/layer_kernels.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace pagoda::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__device__ __forceinline__ float load_weight(const uint8_t* row, CudaWeightType type, int64_t i) {
  switch (type) {
    case CudaWeightType::kF16: return __half2float(reinterpret_cast<const __half*>(row)[i]);
    case CudaWeightType::kBF16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[i]);
    default: return reinterpret_cast<const float*>(row)[i];
  }
}

__global__ void embed_kernel(const uint8_t* table, CudaWeightType type, size_t row_bytes, const int32_t* tokens,
                             int64_t n, float* x) {
  const int64_t t = blockIdx.x;
  const uint8_t* row = table + static_cast<size_t>(tokens[t]) * row_bytes;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) x[t * n + i] = load_weight(row, type, i);
}

// One block per row: thread i sums the squares of elements i, i + 256, ... in order (f32 products, double sums),
// then a fixed tree over the threads.
__global__ void rms_norm_kernel(const float* x, const float* weight, int64_t n, float eps, float* out) {
  __shared__ double partial[kThreads];
  const float* xr = x + blockIdx.x * n;
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) s += static_cast<double>(xr[i] * xr[i]);
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(partial[0] / static_cast<double>(n)) + eps);
  float* o = out + blockIdx.x * n;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) o[i] = (xr[i] * scale) * weight[i];
}

// One block per token; thread i rotates pair i of every head.
__global__ void rope_kernel(float* x, const int32_t* positions, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                            float theta_scale, float freq_scale, bool neox) {
  const int64_t t = blockIdx.x, half = n_rot / 2;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    float theta = static_cast<float>(positions[t]);
    for (int64_t j = 0; j < i; ++j) theta *= theta_scale;
    const float angle = freq_scale * theta;
    const float c = cosf(angle), s = sinf(angle);
    const int64_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + (t * n_heads + h) * head_dim;
      const float x0 = head[a], x1 = head[b];
      head[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
      head[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
    }
  }
}

__global__ void store_kv_kernel(const float* src, int64_t width, const int64_t* slots, KvDtype dtype, uint8_t* dst) {
  const int64_t t = blockIdx.x;
  const float* row = src + t * width;
  const int64_t slot = slots[t];
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    const float v = row[i];
    if (dtype == KvDtype::kF16)
      reinterpret_cast<__half*>(dst)[slot * width + i] = __float2half_rn(v);
    else if (dtype == KvDtype::kBF16)
      reinterpret_cast<__nv_bfloat16*>(dst)[slot * width + i] = __float2bfloat16_rn(v);
    else
      reinterpret_cast<float*>(dst)[slot * width + i] = v;
  }
}

__global__ void silu_mul_kernel(float* gate, const float* up, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float g = gate[i];
    gate[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
  }
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void bias_kernel(float* y, const float* b, int64_t total, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < total) y[i] += b[i % n];
}

__global__ void gather_kernel(const float* x, const int32_t* rows, int64_t n, float* out) {
  const int64_t r = blockIdx.x;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[r * n + i] = x[static_cast<int64_t>(rows[r]) * n + i];
}

}  // namespace

cudaError_t embed_rows(const void* table, CudaWeightType type, size_t row_bytes, const int32_t* tokens, int64_t T,
                       int64_t n, float* x, cudaStream_t stream) {
  embed_kernel<<<static_cast<unsigned>(T), kThreads, 0, stream>>>(static_cast<const uint8_t*>(table), type, row_bytes,
                                                                  tokens, n, x);
  return cudaGetLastError();
}

cudaError_t rms_norm_rows(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* out,
                          cudaStream_t stream) {
  rms_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, n, eps, out);
  return cudaGetLastError();
}

cudaError_t rope_rows(float* x, const int32_t* positions, int64_t T, int64_t n_heads, int64_t head_dim, int64_t n_rot,
                      float theta_scale, float freq_scale, bool neox, cudaStream_t stream) {
  rope_kernel<<<static_cast<unsigned>(T), 128, 0, stream>>>(x, positions, n_heads, head_dim, n_rot, theta_scale,
                                                           freq_scale, neox);
  return cudaGetLastError();
}

cudaError_t store_kv_rows(const float* src, int64_t T, int64_t width, const int64_t* slots, KvDtype dtype, uint8_t* dst,
                          cudaStream_t stream) {
  store_kv_kernel<<<static_cast<unsigned>(T), kThreads, 0, stream>>>(src, width, slots, dtype, dst);
  return cudaGetLastError();
}

cudaError_t silu_mul(float* gate, const float* up, int64_t n, cudaStream_t stream) {
  silu_mul_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, n);
  return cudaGetLastError();
}

cudaError_t add_in_place(float* x, const float* y, int64_t n, cudaStream_t stream) {
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t add_bias(float* y, const float* b, int64_t T, int64_t n, cudaStream_t stream) {
  bias_kernel<<<blocks_for(T * n), kThreads, 0, stream>>>(y, b, T * n, n);
  return cudaGetLastError();
}

cudaError_t gather_rows(const float* x, const int32_t* rows, int64_t count, int64_t n, float* out, cudaStream_t stream) {
  gather_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(x, rows, n, out);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
