// Benchmark of the CUDA paged-attention decode kernel (src/cuda/paged_attention_cuda.h): bytes of K/V read per
// second at 1k-32k keys per sequence, against the GPU's measured copy bandwidth (bytes read + written by a large
// device-to-device copy) and a plain streaming read of the same size. Not a test; results go to docs/PERFORMANCE.md.
//
// Usage: pagoda_cuda_attention_bench [--json FILE] [--reps N] [--total-keys N]
// Each case decodes one token for each of B = total_keys / context sequences (2^19 keys: 2 GiB of f16 K/V for the
// 8B shape, several times the L2), block size 16, physical blocks shuffled, random values. Time: CUDA events around
// each call, 5 warm-up calls, the median of N (20).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/paged_attention_cuda.h"

namespace {

using pagoda::KvDtype;
using namespace pagoda::cuda;

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FATAL: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

// Random 16-bit values that decode to finite numbers in [-1, 1] for f16 and bf16 (a hash of the index).
__global__ void fill_random(uint16_t* p, size_t n, uint32_t seed, int bf16) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float x = (h & 0xffffff) / 8388608.0f - 1.0f;
    p[i] = bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x)) : __half_as_ushort(__float2half_rn(x));
  }
}

__global__ void fill_float(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    p[i] = (h & 0xffffff) / 8388608.0f - 1.0f;
  }
}

// A streaming read of n 16-byte words (the sum is stored so the loads are not removed).
__global__ void read_all(const uint4* __restrict__ p, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 w = __ldg(p + i);
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

template <class F>
double median_ms(F&& f, int warm, int reps) {
  cudaEvent_t a, b;
  cuda_ok(cudaEventCreate(&a), "event");
  cuda_ok(cudaEventCreate(&b), "event");
  for (int i = 0; i < warm; ++i) f();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    cuda_ok(cudaEventRecord(a), "record");
    f();
    cuda_ok(cudaEventRecord(b), "record");
    cuda_ok(cudaEventSynchronize(b), "sync");
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
    t.push_back(ms);
  }
  cuda_ok(cudaGetLastError(), "launch");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Case {
  const char* model;
  int n_heads, n_kv_heads, head_dim;
  KvDtype dtype;
};

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  int reps = 20;
  int64_t total_keys = int64_t{1} << 19;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (arg == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (arg == "--total-keys" && i + 1 < argc) total_keys = std::atoll(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--json FILE] [--reps N] [--total-keys N]\n", argv[0]);
      return 2;
    }
  }
  FILE* json = json_path ? std::fopen(json_path, "w") : nullptr;
  if (json_path && !json) {
    std::fprintf(stderr, "cannot write %s\n", json_path);
    return 2;
  }
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "device properties");
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("device: %s, %d SMs, L2 %d MiB, driver API %d, runtime %d\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20, driver, runtime);

  // Ceilings: a 2 GiB device-to-device copy (read + written bytes) and a streaming read.
  const size_t big = size_t{2} << 30;
  void *src = nullptr, *dst = nullptr;
  uint32_t* sink = nullptr;
  cuda_ok(cudaMalloc(&src, big), "malloc");
  cuda_ok(cudaMalloc(&dst, big), "malloc");
  cuda_ok(cudaMalloc(&sink, 4), "malloc");
  fill_random<<<4096, 256>>>(static_cast<uint16_t*>(src), big / 2, 7, 0);
  const double copy_ms = median_ms([&] { cuda_ok(cudaMemcpyAsync(dst, src, big, cudaMemcpyDeviceToDevice), "copy"); },
                                   3, reps);
  const double copy_gbs = 2.0 * big / (copy_ms * 1e6);
  const double read_ms = median_ms([&] { read_all<<<prop.multiProcessorCount * 8, 512>>>(
                                             static_cast<const uint4*>(src), big / 16, sink); }, 3, reps);
  const double read_gbs = big / (read_ms * 1e6);
  cudaFree(dst);
  std::printf("copy: %.0f GB/s (read + written)   streaming read: %.0f GB/s\n", copy_gbs, read_gbs);
  if (json)
    std::fprintf(json, "{\"kind\":\"ceiling\",\"device\":\"%s\",\"copy_gbs\":%.1f,\"read_gbs\":%.1f,\"bytes\":%zu}\n",
                 prop.name, copy_gbs, read_gbs, big);
  cudaFree(src);

  const Case cases[] = {{"llama-8b", 32, 8, 128, KvDtype::kF16},
                        {"llama-8b", 32, 8, 128, KvDtype::kBF16},
                        {"smollm2-135m", 9, 3, 64, KvDtype::kF16}};
  const int contexts[] = {1024, 2048, 4096, 8192, 16384, 32768};
  const int block_size = 16;
  std::printf("%-14s %-5s %7s %6s %10s %10s %8s %8s\n", "shape", "kv", "context", "seqs", "time_us", "KV GB/s",
              "of copy", "of read");
  for (const Case& c : cases) {
    for (int ctx : contexts) {
      const int B = static_cast<int>(std::max<int64_t>(1, total_keys / ctx));
      const int blocks_per_seq = (ctx + block_size - 1) / block_size;
      const int64_t num_blocks = static_cast<int64_t>(B) * blocks_per_seq;
      const size_t row_elems = static_cast<size_t>(c.n_kv_heads) * c.head_dim;
      const size_t cache_elems = static_cast<size_t>(num_blocks) * block_size * row_elems;
      uint16_t *k = nullptr, *v = nullptr;
      cuda_ok(cudaMalloc(&k, cache_elems * 2), "malloc k");
      cuda_ok(cudaMalloc(&v, cache_elems * 2), "malloc v");
      const int bf16 = c.dtype == KvDtype::kBF16;
      fill_random<<<4096, 256>>>(k, cache_elems, 11, bf16);
      fill_random<<<4096, 256>>>(v, cache_elems, 13, bf16);
      std::vector<int32_t> table(static_cast<size_t>(num_blocks));
      std::iota(table.begin(), table.end(), 0);
      std::mt19937 rng(ctx);
      std::shuffle(table.begin(), table.end(), rng);
      std::vector<int32_t> cu(B + 1), lens(B, ctx);
      for (int s = 0; s <= B; ++s) cu[s] = s;
      float* q = nullptr;
      float* out = nullptr;
      int32_t *d_table = nullptr, *d_cu = nullptr, *d_lens = nullptr;
      const size_t q_elems = static_cast<size_t>(B) * c.n_heads * c.head_dim;
      cuda_ok(cudaMalloc(&q, q_elems * 4), "malloc q");
      cuda_ok(cudaMalloc(&out, q_elems * 4), "malloc out");
      fill_float<<<1024, 256>>>(q, q_elems, 17);
      cuda_ok(cudaMalloc(&d_table, table.size() * 4), "malloc table");
      cuda_ok(cudaMalloc(&d_cu, cu.size() * 4), "malloc cu");
      cuda_ok(cudaMalloc(&d_lens, lens.size() * 4), "malloc lens");
      cuda_ok(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice), "copy");
      cuda_ok(cudaMemcpy(d_cu, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice), "copy");
      cuda_ok(cudaMemcpy(d_lens, lens.data(), lens.size() * 4, cudaMemcpyHostToDevice), "copy");
      CudaPagedAttentionArgs a;
      a.q = q, a.k_cache = k, a.v_cache = v, a.cu_seqlens_q = d_cu, a.seq_lens_kv = d_lens, a.block_table = d_table;
      a.out = out, a.num_seqs = B, a.num_tokens = B, a.max_blocks = blocks_per_seq, a.block_size = block_size;
      a.n_heads = c.n_heads, a.n_kv_heads = c.n_kv_heads, a.head_dim = c.head_dim, a.max_kv_len = ctx;
      a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim)), a.kv_dtype = c.dtype;
      const size_t ws_bytes = paged_attention_cuda_workspace_bytes(a);
      void* ws = nullptr;
      if (ws_bytes) cuda_ok(cudaMalloc(&ws, ws_bytes), "malloc workspace");
      const double ms = median_ms(
          [&] {
            const pagoda::Status st = paged_attention_cuda(a, ws, ws_bytes);
            if (!st.ok()) {
              std::fprintf(stderr, "FATAL: %s\n", st.error().message.c_str());
              std::exit(2);
            }
          },
          5, reps);
      const double kv_bytes = 2.0 * B * static_cast<double>(ctx) * row_elems * 2;
      const double gbs = kv_bytes / (ms * 1e6);
      std::printf("%-14s %-5s %7d %6d %10.1f %10.0f %7.1f%% %7.1f%%\n", c.model, bf16 ? "bf16" : "f16", ctx, B,
                  ms * 1e3, gbs, 100 * gbs / copy_gbs, 100 * gbs / read_gbs);
      if (json)
        std::fprintf(json,
                     "{\"kind\":\"paged_attention\",\"shape\":\"%s\",\"n_heads\":%d,\"n_kv_heads\":%d,\"head_dim\":%d,"
                     "\"kv\":\"%s\",\"context\":%d,\"seqs\":%d,\"block_size\":%d,\"median_ms\":%.5f,"
                     "\"kv_bytes\":%.0f,\"kv_gbs\":%.1f,\"of_copy\":%.4f,\"of_read\":%.4f,\"reps\":%d}\n",
                     c.model, c.n_heads, c.n_kv_heads, c.head_dim, bf16 ? "bf16" : "f16", ctx, B, block_size, ms,
                     kv_bytes, gbs, gbs / copy_gbs, gbs / read_gbs, reps);
      cudaFree(k), cudaFree(v), cudaFree(q), cudaFree(out), cudaFree(d_table), cudaFree(d_cu), cudaFree(d_lens);
      cudaFree(ws);
    }
  }
  cudaFree(sink);
  if (json) std::fclose(json);
  return 0;
}
