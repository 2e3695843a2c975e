#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/cpu/paged_attention_impl.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

using attention_impl::Job;
using attention_impl::kv_row;

}  // namespace

void paged_attention_reference(const PagedAttentionArgs& a, ThreadPool& pool) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  attention_impl::for_each_job(a, pool, [&](const Job& job) {
    thread_local std::vector<float> k, v, scores;  // k, v: [n, head_dim] as f32
    const int32_t kvh = job.head / group;
    // Gather the keys and values this query attends to (logical keys key_begin .. n_keys - 1 of its sequence,
    // for its kv head) into contiguous buffers.
    const int32_t n = job.n_keys - job.key_begin;
    k.resize(static_cast<size_t>(n) * a.head_dim);
    v.resize(k.size());
    for (int32_t p = 0; p < n; ++p) {
      const int32_t key = job.key_begin + p;
      kv_load_row(a.kv_dtype, kv_row(a, a.k_cache, job.seq, key, kvh), a.head_dim, &k[static_cast<size_t>(p) * a.head_dim]);
      kv_load_row(a.kv_dtype, kv_row(a, a.v_cache, job.seq, key, kvh), a.head_dim, &v[static_cast<size_t>(p) * a.head_dim]);
    }
    const float* q = a.q + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * a.head_dim;
    scores.resize(n);
    double max_score = -INFINITY;
    for (int32_t p = 0; p < n; ++p) {
      double s = 0.0;
      for (int32_t d = 0; d < a.head_dim; ++d)
        s += static_cast<double>(q[d]) * k[static_cast<size_t>(p) * a.head_dim + d];
      scores[p] = static_cast<float>(s * a.scale);
      max_score = std::max(max_score, static_cast<double>(scores[p]));
    }
    double sum = 0.0;
    std::vector<double> weights(n);
    for (int32_t p = 0; p < n; ++p) sum += weights[p] = std::exp(scores[p] - max_score);
    float* out = a.out + (static_cast<int64_t>(job.token) * a.n_heads + job.head) * a.head_dim;
    for (int32_t d = 0; d < a.head_dim; ++d) {
      double acc = 0.0;
      for (int32_t p = 0; p < n; ++p) acc += weights[p] * v[static_cast<size_t>(p) * a.head_dim + d];
      out[d] = static_cast<float>(acc / sum);
    }
  });
}

namespace {

// The portable build of the fused kernel: the same operations as the SIMD builds, lane by lane.
struct Portable {
  static constexpr int kRegisterVectors = 1;  // V values the register file holds
  struct V {
    float l[16];
  };
  template <class F>
  static V map(F f) {
    V r;
    for (int i = 0; i < 16; ++i) r.l[i] = f(i);
    return r;
  }
  static V zero() { return set1(0.0f); }
  static V set1(float f) {
    return map([&](int) { return f; });
  }
  static V load(const float* p, int n) {
    return map([&](int i) { return i < n ? p[i] : 0.0f; });
  }
  static void store(float* p, const V& v) { std::memcpy(p, v.l, sizeof v.l); }
  static V add(const V& a, const V& b) {
    return map([&](int i) { return a.l[i] + b.l[i]; });
  }
  static V sub(const V& a, const V& b) {
    return map([&](int i) { return a.l[i] - b.l[i]; });
  }
  static V mul(const V& a, const V& b) {
    return map([&](int i) { return a.l[i] * b.l[i]; });
  }
  // As the SIMD max/min: the second operand when either is NaN (inputs here are never NaN).
  static V max(const V& a, const V& b) {
    return map([&](int i) { return a.l[i] > b.l[i] ? a.l[i] : b.l[i]; });
  }
  static V min(const V& a, const V& b) {
    return map([&](int i) { return a.l[i] < b.l[i] ? a.l[i] : b.l[i]; });
  }
  static V fma(const V& a, const V& b, const V& c) {
    return map([&](int i) { return std::fma(a.l[i], b.l[i], c.l[i]); });
  }
  static V round_nearest(const V& v) {
    return map([&](int i) { return std::nearbyint(v.l[i]); });
  }
  static V pow2i(const V& n) {
    return map([&](int i) {
      const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n.l[i]) + 127) << 23;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    });
  }
  static float reduce_sum(const V& v) {
    float u[8], w4[4], w2[2];
    for (int i = 0; i < 8; ++i) u[i] = v.l[i] + v.l[i + 8];
    for (int i = 0; i < 4; ++i) w4[i] = u[i] + u[i + 4];
    for (int i = 0; i < 2; ++i) w2[i] = w4[i] + w4[i + 2];
    return w2[0] + w2[1];
  }
  // Lane i: reduce_sum(d[i]), for 16 vectors at once.
  static V reduce_sum16(const V* d) {
    return map([&](int i) { return reduce_sum(d[i]); });
  }
  static float reduce_max(const V& v) { return *std::max_element(v.l, v.l + 16); }
  static V load_f16(const uint16_t* p, int n) {
    return map([&](int i) { return i < n ? f16_to_f32(p[i]) : 0.0f; });
  }
  static V load_bf16(const uint16_t* p, int n) {
    return map([&](int i) { return i < n ? bf16_to_f32(p[i]) : 0.0f; });
  }
  static V load_i8(const int8_t* p) {
    return map([&](int i) { return static_cast<float>(p[i]); });
  }
  static float f16(uint16_t bits) { return f16_to_f32(bits); }
};

// One thread's part of the fused kernel in one build (paged_attention_in_region's contract).
using RegionFn = void (*)(const PagedAttentionArgs&, ThreadPool&, int, std::vector<float>&);

bool cpu_supports(const char* isa) {
  for (KernelIsa k : {KernelIsa::kAvx512, KernelIsa::kAvx2, KernelIsa::kPortable})
    if (std::strcmp(isa, kernel_isa_name(k)) == 0) return cpu_can_run(k);
  return false;
}

RegionFn kernel_for(const char* isa) {
  if (std::strcmp(isa, "avx512") == 0) return paged_attention_region_avx512;
  if (std::strcmp(isa, "avx2") == 0) return paged_attention_region_avx2;
  return paged_attention_region_portable;
}

RegionFn detect() { return kernel_for(kernel_isa_name(default_kernel_isa())); }

// The whole kernel on the pool: every thread its part, with one scratch buffer (the calling thread's) for all.
void run_on_pool(RegionFn kernel, const PagedAttentionArgs& a, ThreadPool& pool) {
  thread_local std::vector<float> scratch;
  std::vector<float>& shared = scratch;
  pool.run([&](int tid) { kernel(a, pool, tid, shared); });
}

}  // namespace

void paged_attention_region_portable(const PagedAttentionArgs& a, ThreadPool& pool, int tid,
                                     std::vector<float>& scratch) {
  attention_impl::paged_attention_region_with<Portable>(a, pool, tid, scratch);
}

bool paged_attention_isa(const PagedAttentionArgs& a, ThreadPool& pool, const char* isa) {
  if (!cpu_supports(isa)) return false;
  run_on_pool(kernel_for(isa), a, pool);
  return true;
}

void paged_attention(const PagedAttentionArgs& a, ThreadPool& pool) {
  static const RegionFn kernel = detect();
  run_on_pool(kernel, a, pool);
}

void paged_attention_in_region(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch) {
  static const RegionFn kernel = detect();
  kernel(a, pool, tid, scratch);
}

}  // namespace pagoda
