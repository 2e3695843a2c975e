// The paged-attention kernels for NVIDIA GPUs (paged_attention_cuda.h; docs/kernels.md, "GPU paged attention").
//
// Thread layout of the segment kernel (128 threads, one block per (query token, KV head, segment)):
//   a K or V row of D values is read by TPK = D / 8 consecutive lanes, 8 values (16 bytes of f16/bf16) each;
//   a warp reads 32 / TPK rows at once and the block KPI = 128 / TPK rows per iteration;
//   thread t owns row slot t / TPK (keys slot, slot + KPI, ... of the segment) and values 8 * (t % TPK) ... + 7.
// Every sum has a fixed shape: a score is the 8-value fma chain of each lane, then a butterfly over the TPK lanes;
// the softmax sum is each thread's strided keys in order, a butterfly over the warp, then the 4 warps in order; a
// value is each thread's keys in order, a butterfly over the row slots of a warp, then the 4 warps in order. Since
// every xor-butterfly step adds the same two numbers on both lanes (addition commutes), all lanes agree.
#include "cuda/paged_attention_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

namespace pagoda::cuda {
namespace {

// Rows of K or V each thread has in flight (a compile-time tuning constant: scripts/cuda/device_check.sh times 4, 8 and
// 16 with -DPAGODA_CUDA_KV_BATCH=N builds of the benchmark).
#ifndef PAGODA_CUDA_KV_BATCH
#define PAGODA_CUDA_KV_BATCH 4
#endif
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

struct F32Tag {};
struct F16Tag {};
struct BF16Tag {};

template <class T>
struct Elem;
template <>
struct Elem<F32Tag> {
  static constexpr int kBytes = 4;
};
template <>
struct Elem<F16Tag> {
  static constexpr int kBytes = 2;
};
template <>
struct Elem<BF16Tag> {
  static constexpr int kBytes = 2;
};

// 8 stored values of a row are loaded raw (W 16-byte words: 2 for f32, 1 for f16 and bf16), several rows at once,
// then converted to their exact f32 values.
template <class KT>
constexpr int kWords = Elem<KT>::kBytes / 2;

template <class KT>
__device__ __forceinline__ void load_raw(const uint8_t* p, uint4 (&w)[kWords<KT>]) {
#pragma unroll
  for (int i = 0; i < kWords<KT>; ++i) w[i] = __ldg(reinterpret_cast<const uint4*>(p) + i);
}

__device__ __forceinline__ void to_f32(F32Tag, const uint4 (&w)[2], float (&x)[8]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    x[4 * i] = __uint_as_float(w[i].x), x[4 * i + 1] = __uint_as_float(w[i].y);
    x[4 * i + 2] = __uint_as_float(w[i].z), x[4 * i + 3] = __uint_as_float(w[i].w);
  }
}
__device__ __forceinline__ void to_f32(F16Tag, const uint4 (&w)[1], float (&x)[8]) {
  const uint32_t u[4] = {w[0].x, w[0].y, w[0].z, w[0].w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&u[i]));
    x[2 * i] = f.x, x[2 * i + 1] = f.y;
  }
}
__device__ __forceinline__ void to_f32(BF16Tag, const uint4 (&w)[1], float (&x)[8]) {
  const uint32_t u[4] = {w[0].x, w[0].y, w[0].z, w[0].w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    x[2 * i] = __uint_as_float(u[i] << 16);
    x[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);
  }
}

__host__ __device__ constexpr int ilog2(int x) { return x <= 1 ? 0 : 1 + ilog2(x / 2); }

// Sums each of the GMAX values d[] over the TPK lanes of a row (lanes part = 0 .. TPK - 1 of one warp) with as few
// shuffles as the values allow: the first ilog2(min(GMAX, TPK)) steps halve the values a lane keeps (the lower lane
// of a pair keeps the lower half, adding its partner's copy of it), the rest add a single value butterfly-wise.
// Afterwards the lane holds the full sums of heads g0 .. g0 + (GMAX >> halvings) - 1 in d[0..], and every lane with
// the same high bits of part holds the same bits. The order of additions is fixed, so the sums are reproducible.
template <int TPK, int GMAX>
__device__ __forceinline__ int reduce_row_sums(float (&d)[GMAX], int part) {
  int g0 = 0;
  int held = GMAX;
#pragma unroll
  for (int o = TPK / 2; o >= 1; o /= 2) {
    if (held > 1) {
      const bool upper = (part & o) != 0;
#pragma unroll
      for (int i = 0; i < GMAX / 2; ++i) {
        if (i < held / 2) {
          const float send = upper ? d[i] : d[i + held / 2];
          const float keep = upper ? d[i + held / 2] : d[i];
          d[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
        }
      }
      if (upper) g0 += held / 2;
      held /= 2;
    } else {
      d[0] += __shfl_xor_sync(0xffffffffu, d[0], o);
    }
  }
  return g0;
}

struct QueryInfo {
  int32_t seq, n_keys, key_begin;
};

// The sequence of query row `token` (cu_seqlens_q is sorted) and the keys it attends to: [key_begin, n_keys).
__device__ __forceinline__ QueryInfo query_info(const CudaPagedAttentionArgs& a, int32_t token) {
  int32_t lo = 0, hi = a.num_seqs - 1;
  while (lo < hi) {  // the last s with cu_seqlens_q[s] <= token
    const int32_t mid = (lo + hi + 1) / 2;
    if (a.cu_seqlens_q[mid] <= token) lo = mid; else hi = mid - 1;
  }
  const int32_t q_begin = a.cu_seqlens_q[lo], q_len = a.cu_seqlens_q[lo + 1] - q_begin;
  return {lo, a.seq_lens_kv[lo] - q_len + (token - q_begin) + 1, a.kv_begin ? a.kv_begin[lo] : 0};
}

__device__ __forceinline__ int32_t segments_of(const QueryInfo& qi, int32_t seg_len) {
  return (qi.n_keys - qi.key_begin + seg_len - 1) / seg_len;
}

// The single-segment finish and the fold's finish: the same one operation, so both give the bits of values / sum.
__device__ __forceinline__ float finish(float acc, float sum) { return acc * (1.0f / sum); }

// One (token, KV head, segment): the segment's state for the GMAX >= group query heads of that KV head.
// Shared memory: the segment's row offsets, its scores [GMAX][kSeg] (then its weights), and the warps' partial
// values [kWarps][GMAX][D], maxima and sums [GMAX][kWarps].
template <int D, int GMAX, class KT, int kSeg = cuda_key_segment(D)>
__global__ void __launch_bounds__(kThreads) segment_kernel(CudaPagedAttentionArgs a, int32_t max_segments,
                                                            float* __restrict__ part_acc,
                                                            float2* __restrict__ part_ms) {
  constexpr int TPK = D / 8;           // lanes per row
  constexpr int KPI = kThreads / TPK;  // rows per block per iteration
  constexpr int kRowBytes = D * Elem<KT>::kBytes;
  constexpr int kBatch = kSeg / KPI < PAGODA_CUDA_KV_BATCH ? kSeg / KPI : PAGODA_CUDA_KV_BATCH;
  __shared__ float scores[GMAX][kSeg];
  __shared__ float warp_vals[kWarps][GMAX][D];
  __shared__ float warp_red[2][GMAX][kWarps];
  __shared__ int64_t row_base[kSeg];

  const int32_t token = blockIdx.x / max_segments, seg = blockIdx.x % max_segments, kvh = blockIdx.y;
  const QueryInfo qi = query_info(a, token);
  const int32_t n_segments = segments_of(qi, kSeg);
  if (seg >= n_segments) return;
  const int32_t seg_begin = qi.key_begin + seg * kSeg;
  const int32_t n_seg = min(kSeg, qi.n_keys - seg_begin);
  const int group = a.n_heads / a.n_kv_heads;

  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int slot = t / TPK, part = t % TPK;

  float q[GMAX][8];
#pragma unroll
  for (int g = 0; g < GMAX; ++g) {
    const int head = min(kvh * group + g, a.n_heads - 1);  // rows past the group compute unused copies
    const float4* qrow = reinterpret_cast<const float4*>(a.q + (static_cast<int64_t>(token) * a.n_heads + head) * D + part * 8);
    const float4 lo = qrow[0], hi = qrow[1];
    q[g][0] = lo.x, q[g][1] = lo.y, q[g][2] = lo.z, q[g][3] = lo.w;
    q[g][4] = hi.x, q[g][5] = hi.y, q[g][6] = hi.z, q[g][7] = hi.w;
  }

  // Byte offsets of the segment's rows (KV head 0), located once through the block table for both passes.
  const int32_t* table = a.block_table + static_cast<int64_t>(qi.seq) * a.max_blocks;
  const int64_t row_stride = static_cast<int64_t>(a.n_kv_heads) * kRowBytes;
  for (int j = t; j < n_seg; j += kThreads) {
    const int32_t p = seg_begin + j;
    row_base[j] = (static_cast<int64_t>(table[p / a.block_size]) * a.block_size + p % a.block_size) * row_stride;
  }
  const int64_t head_offset = static_cast<int64_t>(kvh) * kRowBytes + part * 8 * Elem<KT>::kBytes;
  auto row_offset = [&](int32_t j) { return row_base[j] + head_offset; };  // this thread's 8 values of key j
  const uint8_t* k_cache = static_cast<const uint8_t*>(a.k_cache);
  const uint8_t* v_cache = static_cast<const uint8_t*>(a.v_cache);
  const int iterations = (n_seg + KPI - 1) / KPI;
  __syncthreads();

  // Scores: kBatch rows of K in flight per thread (rows past the segment re-read its last row and are dropped).
  constexpr int kHalvings = ilog2(GMAX < TPK ? GMAX : TPK);
  constexpr int kHeld = GMAX >> kHalvings;
  const bool writes_scores = (part & ((TPK >> kHalvings) - 1)) == 0;
  for (int it0 = 0; it0 < iterations; it0 += kBatch) {
    uint4 raw[kBatch][kWords<KT>];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) load_raw<KT>(k_cache + row_offset(min((it0 + u) * KPI + slot, n_seg - 1)), raw[u]);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = (it0 + u) * KPI + slot;
      float k[8];
      to_f32(KT{}, raw[u], k);
      float dot[GMAX];
#pragma unroll
      for (int g = 0; g < GMAX; ++g) {
        float d = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) d = fmaf(q[g][e], k[e], d);
        dot[g] = d;
      }
      const int g0 = reduce_row_sums<TPK, GMAX>(dot, part);
      if (writes_scores && j < n_seg) {
#pragma unroll
        for (int i = 0; i < kHeld; ++i) scores[g0 + i][j] = dot[i] * a.scale;
      }
    }
  }
  // The first batch of V rows is loaded before the softmax, whose barriers it then overlaps.
  uint4 raw_v[kBatch][kWords<KT>];
#pragma unroll
  for (int u = 0; u < kBatch; ++u) load_raw<KT>(v_cache + row_offset(min(u * KPI + slot, n_seg - 1)), raw_v[u]);
  __syncthreads();

  // Softmax over the segment: max, then e^(s - max) in place and its sum.
#pragma unroll
  for (int g = 0; g < GMAX; ++g) {
    float m = -INFINITY;
    for (int j = t; j < n_seg; j += kThreads) m = fmaxf(m, scores[g][j]);
#pragma unroll
    for (int off = 16; off >= 1; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) warp_red[0][g][warp] = m;
  }
  __syncthreads();
#pragma unroll
  for (int g = 0; g < GMAX; ++g) {
    float m = warp_red[0][g][0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) m = fmaxf(m, warp_red[0][g][w]);
    float s = 0.0f;
    for (int j = t; j < n_seg; j += kThreads) {
      const float p = expf(scores[g][j] - m);
      scores[g][j] = p;
      s += p;
    }
#pragma unroll
    for (int off = 16; off >= 1; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) warp_red[1][g][warp] = s;
  }
  __syncthreads();

  // Weighted values.
  float acc[GMAX][8];
#pragma unroll
  for (int g = 0; g < GMAX; ++g)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
  for (int it0 = 0; it0 < iterations; it0 += kBatch) {
    if (it0 > 0) {
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        load_raw<KT>(v_cache + row_offset(min((it0 + u) * KPI + slot, n_seg - 1)), raw_v[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int j = (it0 + u) * KPI + slot;
      if (j < n_seg) {
        float v[8];
        to_f32(KT{}, raw_v[u], v);
#pragma unroll
        for (int g = 0; g < GMAX; ++g) {
          const float p = scores[g][j];
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(p, v[e], acc[g][e]);
        }
      }
    }
  }
#pragma unroll
  for (int g = 0; g < GMAX; ++g)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      float x = acc[g][e];
#pragma unroll
      for (int off = 16; off >= TPK; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
      acc[g][e] = x;
    }
  if (lane < TPK) {
#pragma unroll
    for (int g = 0; g < GMAX; ++g)
#pragma unroll
      for (int e = 0; e < 8; ++e) warp_vals[warp][g][part * 8 + e] = acc[g][e];
  }
  __syncthreads();

  // Each thread finishes some (head, value) pairs: the 4 warps' sums in order.
  const int64_t seg_state = (static_cast<int64_t>(token) * a.n_heads) * max_segments;
  for (int i = t; i < GMAX * D; i += kThreads) {
    const int g = i / D, d = i % D;
    if (g >= group) break;
    float x = warp_vals[0][g][d];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) x += warp_vals[w][g][d];
    float s = warp_red[1][g][0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) s += warp_red[1][g][w];
    const int head = kvh * group + g;
    if (n_segments == 1) {
      a.out[(static_cast<int64_t>(token) * a.n_heads + head) * D + d] = finish(x, s);
    } else {
      const int64_t state = seg_state + static_cast<int64_t>(head) * max_segments + seg;
      part_acc[state * D + d] = x;
      if (d == 0) {
        float m = warp_red[0][g][0];
        for (int w = 1; w < kWarps; ++w) m = fmaxf(m, warp_red[0][g][w]);
        part_ms[state] = make_float2(m, s);
      }
    }
  }
}

// One (token, head) of a query with two or more segments: every segment's state rescaled to the largest max M
// (weights e^(max_i - M), all independent) and added in segment order, sum = fma(sum_i, w_i, sum) and
// values = fma(values_i, w_i, values) from 0; then values / sum. Dynamic shared memory: [2][max_segments] floats.
__global__ void __launch_bounds__(kThreads) fold_kernel(CudaPagedAttentionArgs a, int32_t max_segments,
                                                        int32_t seg_len, const float* __restrict__ part_acc,
                                                        const float2* __restrict__ part_ms) {
  extern __shared__ float fold_smem[];
  float* weight = fold_smem;                // [n_segments]
  float* seg_sum = fold_smem + max_segments;  // [n_segments]
  __shared__ float warp_max[kWarps];
  __shared__ float total;
  const int32_t token = blockIdx.x, head = blockIdx.y;
  const QueryInfo qi = query_info(a, token);
  const int32_t n_segments = segments_of(qi, seg_len);
  if (n_segments <= 1) return;
  const int t = threadIdx.x;
  const int64_t first = (static_cast<int64_t>(token) * a.n_heads + head) * max_segments;
  float m = -INFINITY;
  for (int32_t i = t; i < n_segments; i += kThreads) m = fmaxf(m, part_ms[first + i].x);
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (t % 32 == 0) warp_max[t / 32] = m;
  __syncthreads();
  m = warp_max[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, warp_max[w]);
  for (int32_t i = t; i < n_segments; i += kThreads) {
    const float2 ms = part_ms[first + i];
    weight[i] = expf(ms.x - m);
    seg_sum[i] = ms.y;
  }
  __syncthreads();
  if (t == 0) {
    float s = 0.0f;
    for (int32_t i = 0; i < n_segments; ++i) s = fmaf(seg_sum[i], weight[i], s);
    total = s;
  }
  const int D = a.head_dim;
  for (int d = t; d < D; d += kThreads) {
    float x = 0.0f;
#pragma unroll 8
    for (int32_t i = 0; i < n_segments; ++i) x = fmaf(part_acc[(first + i) * D + d], weight[i], x);
    fold_smem[2 * max_segments + d] = x;
  }
  __syncthreads();
  for (int d = t; d < D; d += kThreads)
    a.out[(static_cast<int64_t>(token) * a.n_heads + head) * D + d] = finish(fold_smem[2 * max_segments + d], total);
}

int32_t max_segments_of(const CudaPagedAttentionArgs& a) {
  const int32_t seg_len = cuda_key_segment(a.head_dim);
  return static_cast<int32_t>((static_cast<int64_t>(a.max_kv_len) + seg_len - 1) / seg_len);
}

// Dynamic shared memory of the fold: weights and sums of each segment, then the values of one head.
size_t fold_smem_bytes(const CudaPagedAttentionArgs& a) {
  return (2 * static_cast<size_t>(max_segments_of(a)) + a.head_dim) * sizeof(float);
}

template <int D, int GMAX, class KT>
cudaError_t launch_typed(const CudaPagedAttentionArgs& a, float* part_acc, float2* part_ms, cudaStream_t stream) {
  const int32_t max_segments = max_segments_of(a);
  const dim3 grid(static_cast<unsigned>(a.num_tokens) * max_segments, a.n_kv_heads);
  segment_kernel<D, GMAX, KT><<<grid, kThreads, 0, stream>>>(a, max_segments, part_acc, part_ms);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || max_segments <= 1) return err;
  fold_kernel<<<dim3(a.num_tokens, a.n_heads), kThreads, fold_smem_bytes(a), stream>>>(
      a, max_segments, cuda_key_segment(D), part_acc, part_ms);
  return cudaGetLastError();
}

template <int D, int GMAX>
cudaError_t launch_group(const CudaPagedAttentionArgs& a, float* pa, float2* pm, cudaStream_t s) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: return launch_typed<D, GMAX, F32Tag>(a, pa, pm, s);
    case KvDtype::kF16: return launch_typed<D, GMAX, F16Tag>(a, pa, pm, s);
    case KvDtype::kBF16: return launch_typed<D, GMAX, BF16Tag>(a, pa, pm, s);
    default: return cudaErrorInvalidValue;  // refused by the checks before
  }
}

template <int D>
cudaError_t launch_dim(const CudaPagedAttentionArgs& a, float* pa, float2* pm, cudaStream_t s) {
  const int group = a.n_heads / a.n_kv_heads;
  if (group <= 1) return launch_group<D, 1>(a, pa, pm, s);
  if (group <= 2) return launch_group<D, 2>(a, pa, pm, s);
  if (group <= 4) return launch_group<D, 4>(a, pa, pm, s);
  return launch_group<D, 8>(a, pa, pm, s);
}

}  // namespace

size_t paged_attention_cuda_workspace_bytes(const CudaPagedAttentionArgs& a) {
  const int64_t max_segments = max_segments_of(a);
  if (max_segments <= 1 || a.num_tokens <= 0) return 0;
  const int64_t states = static_cast<int64_t>(a.num_tokens) * a.n_heads * max_segments;
  return static_cast<size_t>(states) * (a.head_dim * sizeof(float) + sizeof(float2));
}

Status paged_attention_cuda(const CudaPagedAttentionArgs& a, void* workspace, size_t workspace_bytes, void* stream) {
  const int D = a.head_dim;
  if (D != 8 && D != 16 && D != 32 && D != 64 && D != 128 && D != 256)
    return make_error("CUDA paged attention: head size " + std::to_string(D) + " is not 8, 16, 32, 64, 128 or 256");
  if (a.n_heads <= 0 || a.n_kv_heads <= 0 || a.n_heads % a.n_kv_heads != 0)
    return make_error("CUDA paged attention: " + std::to_string(a.n_heads) + " query heads do not divide into " +
                      std::to_string(a.n_kv_heads) + " KV heads");
  if (a.n_heads / a.n_kv_heads > kCudaMaxGroup)
    return make_error("CUDA paged attention: " + std::to_string(a.n_heads / a.n_kv_heads) +
                      " query heads per KV head (at most " + std::to_string(kCudaMaxGroup) + ")");
  if (a.kv_dtype != KvDtype::kF32 && a.kv_dtype != KvDtype::kF16 && a.kv_dtype != KvDtype::kBF16)
    return make_error("CUDA paged attention: KV cache type q8_0 is not supported on the GPU (f32, f16 or bf16)");
  if (a.block_size <= 0 || a.num_seqs < 0 || a.num_tokens < 0 || a.max_kv_len < 0)
    return make_error("CUDA paged attention: block size, sequence, token and key counts must be positive");
  if (a.num_tokens == 0) return Status::success();
  if (static_cast<int64_t>(a.num_tokens) * max_segments_of(a) > 0x7fffffff)
    return make_error("CUDA paged attention: too many (token, segment) pairs for one launch");
  if (fold_smem_bytes(a) > 48 * 1024)
    return make_error("CUDA paged attention: " + std::to_string(a.max_kv_len) + " keys per sequence is over the " +
                      std::to_string((48 * 1024 / sizeof(float) - D) / 2 * cuda_key_segment(D)) +
                      " the split-KV fold takes");
  const size_t need = paged_attention_cuda_workspace_bytes(a);
  if (workspace_bytes < need || (need > 0 && workspace == nullptr))
    return make_error("CUDA paged attention: the workspace holds " + std::to_string(workspace_bytes) + " bytes, " +
                      std::to_string(need) + " needed");
  const int64_t states = need ? static_cast<int64_t>(a.num_tokens) * a.n_heads * max_segments_of(a) : 0;
  float* part_acc = static_cast<float*>(workspace);
  float2* part_ms = need ? reinterpret_cast<float2*>(part_acc + states * D) : nullptr;
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaError_t err = cudaSuccess;
  switch (D) {
    case 8: err = launch_dim<8>(a, part_acc, part_ms, s); break;
    case 16: err = launch_dim<16>(a, part_acc, part_ms, s); break;
    case 32: err = launch_dim<32>(a, part_acc, part_ms, s); break;
    case 64: err = launch_dim<64>(a, part_acc, part_ms, s); break;
    case 128: err = launch_dim<128>(a, part_acc, part_ms, s); break;
    default: err = launch_dim<256>(a, part_acc, part_ms, s); break;
  }
  if (err != cudaSuccess)
    return make_error(std::string("CUDA paged attention: launch failed: ") + cudaGetErrorString(err));
  return Status::success();
}

}  // namespace pagoda::cuda
