#include "kernels/cpu/matmul.h"

#include <cassert>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "util/fp16.h"

namespace pagoda {
namespace {

// Rows are handed to threads in groups of this many: a multiple of every kernel's tile height (3, 4, 6, 8).
constexpr int64_t kRowGroup = 24;

struct Isa {
  const char* name;
  kernels::MatmulRowsFn fn;
};

bool cpu_has_f16c() {
#if defined(__x86_64__)
  // clang 14's __builtin_cpu_supports does not know "f16c": ask CPUID leaf 1 directly (ECX bit 29).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") &&
         cpu_has_f16c();
#else
  return false;
#endif
}

bool cpu_has_avx2() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
#else
  return false;
#endif
}

Isa detect_isa() {
  if (cpu_has_avx512()) return {"avx512", kernels::matmul_rows_avx512};
  if (cpu_has_avx2()) return {"avx2", kernels::matmul_rows_avx2};
  return {"scalar", kernels::matmul_rows_scalar};
}

Isa& active_isa() {
  static Isa isa = detect_isa();
  return isa;
}

}  // namespace

bool kernels::force_matmul_isa(const char* name) {
  if (std::strcmp(name, "avx512") == 0 && cpu_has_avx512()) {
    active_isa() = {"avx512", matmul_rows_avx512};
    return true;
  }
  if (std::strcmp(name, "avx2") == 0 && cpu_has_avx2()) {
    active_isa() = {"avx2", matmul_rows_avx2};
    return true;
  }
  if (std::strcmp(name, "scalar") == 0) {
    active_isa() = {"scalar", matmul_rows_scalar};
    return true;
  }
  return false;
}

const char* matmul_isa_name() { return active_isa().name; }

void matmul(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool) {
  const kernels::MatmulRowsFn fn = active_isa().fn;
  const int64_t num_groups = (w.rows + kRowGroup - 1) / kRowGroup;
  pool.parallel_for(num_groups, [&](int64_t g_begin, int64_t g_end) {
    const int64_t r_end = g_end * kRowGroup < w.rows ? g_end * kRowGroup : w.rows;
    fn(w, x, num_tokens, y, g_begin * kRowGroup, r_end);
  });
}

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) {
  const uint8_t* row = w.row(r);
  switch (w.type) {
    case GgmlType::F32: std::memcpy(out, row, sizeof(float) * w.cols); return;
    case GgmlType::F16: {
      const auto* h = reinterpret_cast<const uint16_t*>(row);
      for (int64_t k = 0; k < w.cols; ++k) out[k] = f16_to_f32(h[k]);
      return;
    }
    case GgmlType::BF16: {
      const auto* h = reinterpret_cast<const uint16_t*>(row);
      for (int64_t k = 0; k < w.cols; ++k) out[k] = bf16_to_f32(h[k]);
      return;
    }
    case GgmlType::Q8_0: {
      const auto* blocks = reinterpret_cast<const BlockQ8_0*>(row);
      for (int64_t b = 0; b < w.cols / kQ8_0BlockElems; ++b) {
        const float d = f16_to_f32(blocks[b].scale_f16);
        for (uint32_t i = 0; i < kQ8_0BlockElems; ++i) out[b * kQ8_0BlockElems + i] = blocks[b].q[i] * d;
      }
      return;
    }
    default: assert(false && "the loader rejects unsupported weight types"); return;
  }
}

}  // namespace pagoda
