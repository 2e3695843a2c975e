#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cassert>
#include <vector>
#include <cstring>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu_features.h"

namespace pagoda {
namespace {

// Rows are handed to threads in groups of this many: a multiple of every kernel's tile height (3, 4, 6, 8).
constexpr int64_t kRowGroup = 24;

struct Isa {
  const char* name;
  kernels::MatmulRowsFn fn;
  KernelIsa isa;
};

Isa isa_entry(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
      return {"avx512", kernels::matmul_rows_avx512, isa};
    case KernelIsa::kAvx2:
      return {"avx2", kernels::matmul_rows_avx2, isa};
    case KernelIsa::kPortable:
      break;
  }
  return {"portable", kernels::matmul_rows_scalar, KernelIsa::kPortable};
}

Isa detect_isa() { return isa_entry(default_kernel_isa()); }

Isa& active_isa() {
  static Isa isa = detect_isa();
  return isa;
}

}  // namespace

bool kernels::force_matmul_isa(const char* name) {
  for (KernelIsa isa : {KernelIsa::kAvx512, KernelIsa::kAvx2, KernelIsa::kPortable}) {
    const bool named = std::strcmp(name, kernel_isa_name(isa)) == 0 ||
                       (isa == KernelIsa::kPortable && std::strcmp(name, "scalar") == 0);
    if (!named) continue;
    if (!cpu_can_run(isa)) return false;
    active_isa() = isa_entry(isa);
    return true;
  }
  return false;
}

const char* matmul_isa_name() { return active_isa().name; }

namespace {

// Quantized weights: each token's activations quantized once, then one integer dot per (row, token).
void matmul_integer_dot(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool) {
  const ActivationFormat format = activation_format(w.type);
  const size_t x_bytes = activation_row_bytes(format, w.cols);
  thread_local std::vector<uint8_t> xq;  // [num_tokens, x_bytes] quantized activations, shared by the pool
  xq.resize(static_cast<size_t>(num_tokens) * x_bytes);
  uint8_t* xq_data = xq.data();
  const QuantKernels k = quant_kernels(w.type, active_isa().isa);
  pool.parallel_for(num_tokens, [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) k.quantize(x + t * w.cols, w.cols, xq_data + t * x_bytes);
  });
  const int64_t num_groups = (w.rows + kRowGroup - 1) / kRowGroup;
  constexpr int64_t kTokenChunk = 64;  // a chunk's quantized activations stay in L2 while rows stream past
  // Dots over rows [r_begin, r_end) x tokens [t_begin, t_end), with `fn` taking `fn_rows` rows x `fn_tokens` tokens
  // where a whole block of them fits and single dots elsewhere. Every value is bitwise its single dot.
  auto run = [&](QuantTileFn fn, int fn_rows, int fn_tokens, int64_t r_begin, int64_t r_end, int64_t t_begin,
                 int64_t t_end) {
    const int64_t t_full = fn ? t_begin + (t_end - t_begin) / fn_tokens * fn_tokens : t_begin;
    const int64_t r_full = fn ? r_begin + (r_end - r_begin) / fn_rows * fn_rows : r_begin;
    for (int64_t r = r_begin; r < r_full; r += fn_rows)
      for (int64_t t = t_begin; t < t_full; t += fn_tokens)
        fn(w.row(r), w.row_bytes, xq_data + t * x_bytes, x_bytes, w.cols, y + t * w.rows + r, w.rows);
    for (int64_t r = r_begin; r < r_end; ++r)
      for (int64_t t = (r < r_full ? t_full : t_begin); t < t_end; ++t)
        y[t * w.rows + r] = k.dot(w.row(r), xq_data + t * x_bytes, w.cols);
  };
  pool.parallel_for(num_groups, [&](int64_t g_begin, int64_t g_end) {
    const int64_t r_begin = g_begin * kRowGroup, r_end = std::min(g_end * kRowGroup, w.rows);
    for (int64_t t0 = 0; t0 < num_tokens; t0 += kTokenChunk) {
      const int64_t t_end = std::min(t0 + kTokenChunk, num_tokens);
      // Tiles of tile_rows x tile_tokens (prefill), single dots for the rest (decode: each row streams past once,
      // in address order; interleaving several rows measured 2x slower on decode).
      run(k.tile, k.tile_rows, k.tile_tokens, r_begin, r_end, t0, t_end);
    }
  });
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool) {
  if (uses_integer_dot(w.type)) return matmul_integer_dot(w, x, num_tokens, y, pool);
  const kernels::MatmulRowsFn fn = active_isa().fn;
  const int64_t num_groups = (w.rows + kRowGroup - 1) / kRowGroup;
  pool.parallel_for(num_groups, [&](int64_t g_begin, int64_t g_end) {
    const int64_t r_end = g_end * kRowGroup < w.rows ? g_end * kRowGroup : w.rows;
    fn(w, x, num_tokens, y, g_begin * kRowGroup, r_end);
  });
}

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) { dequantize(w.type, w.row(r), w.cols, out); }

}  // namespace pagoda
