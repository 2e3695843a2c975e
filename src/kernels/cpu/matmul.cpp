#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <cassert>
#include <vector>
#include <cstring>

#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_packed.h"
#include "kernels/cpu_features.h"

namespace pagoda {
namespace {

// 64-byte aligned storage (the prepared activation rows are read with aligned 512-bit loads).
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t{64}); }
  bool operator==(const AlignedAllocator&) const { return true; }
};

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

// Each token's activations quantized once for every matrix of the same format: xq [num_tokens, x_bytes].
const uint8_t* quantize_tokens(const QuantKernels& k, ActivationFormat format, const float* x, int64_t cols,
                               int64_t num_tokens, ThreadPool& pool) {
  const size_t x_bytes = activation_row_bytes(format, cols);
  thread_local std::vector<uint8_t> xq;  // [num_tokens, x_bytes] quantized activations, shared by the pool
  xq.resize(static_cast<size_t>(num_tokens) * x_bytes);
  uint8_t* xq_data = xq.data();
  pool.parallel_for(num_tokens, [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) k.quantize(x + t * cols, cols, xq_data + t * x_bytes);
  });
  return xq_data;
}

constexpr int64_t kTokenChunk = 64;  // a chunk's quantized activations stay in L2 while rows stream past

// Packed groups [g_begin, g_end) of w (kPackRows rows each, quant_dot_packed.h) for every token.
void packed_groups(const WeightMatrix& w, const PackedKernels& pk, const uint8_t* xq, size_t x_bytes,
                   int64_t num_tokens, float* y, int64_t g_begin, int64_t g_end) {
  const size_t group_bytes = packed_group_bytes(w.type, w.cols);
  for (int64_t t_begin = 0; t_begin < num_tokens; t_begin += kTokenChunk) {
    const int64_t t_end = std::min(t_begin + kTokenChunk, num_tokens);
    for (int64_t g = g_begin; g < g_end; ++g) {
      const int n_rows = static_cast<int>(std::min<int64_t>(kPackRows, w.rows - g * kPackRows));
      for (int64_t t = t_begin; t < t_end; t += pk.max_tokens) {
        const int n = static_cast<int>(std::min<int64_t>(pk.max_tokens, t_end - t));
        pk.tile(w.packed + g * group_bytes, xq + t * x_bytes, x_bytes, w.cols, y + t * w.rows + g * kPackRows, w.rows,
                n, n_rows);
      }
    }
  }
}

// Rows of groups [g_begin, g_end) of w (kRowGroup rows each) for every token: one integer dot per (row, token).
void integer_dot_groups(const WeightMatrix& w, const QuantKernels& k, const uint8_t* xq, size_t x_bytes,
                        int64_t num_tokens, float* y, int64_t g_begin, int64_t g_end) {
  if (w.packed) return packed_groups(w, packed_kernels(w.type, active_isa().isa), xq, x_bytes, num_tokens, y, g_begin, g_end);
  if (num_tokens < k.tile_tokens && k.dot_prepared) {
    // Decode (fewer tokens than a tile): each token's activation side prepared once for all of this thread's rows.
    thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> prepared;
    const size_t bytes = k.prepared_bytes(w.cols);
    prepared.resize(bytes);
    const int64_t r_begin = g_begin * kRowGroup, r_end = std::min(g_end * kRowGroup, w.rows);
    for (int64_t t = 0; t < num_tokens; ++t) {
      k.prepare(xq + t * x_bytes, w.cols, prepared.data());
      for (int64_t r = r_begin; r < r_end; ++r) y[t * w.rows + r] = k.dot_prepared(w.row(r), prepared.data(), w.cols);
    }
    return;
  }
  // Dots over rows [r_begin, r_end) x tokens [t_begin, t_end), with the tile taking tile_rows rows x tile_tokens
  // tokens where a whole block of them fits and single dots elsewhere. Every value is bitwise its single dot.
  const int64_t r_begin = g_begin * kRowGroup, r_end = std::min(g_end * kRowGroup, w.rows);
  for (int64_t t_begin = 0; t_begin < num_tokens; t_begin += kTokenChunk) {
    const int64_t t_end = std::min(t_begin + kTokenChunk, num_tokens);
    // Tiles (prefill), single dots for the rest (decode: each row streams past once, in address order;
    // interleaving several rows measured 2x slower on decode).
    const int64_t t_full = k.tile ? t_begin + (t_end - t_begin) / k.tile_tokens * k.tile_tokens : t_begin;
    const int64_t r_full = k.tile ? r_begin + (r_end - r_begin) / k.tile_rows * k.tile_rows : r_begin;
    for (int64_t r = r_begin; r < r_full; r += k.tile_rows)
      for (int64_t t = t_begin; t < t_full; t += k.tile_tokens)
        k.tile(w.row(r), w.row_bytes, xq + t * x_bytes, x_bytes, w.cols, y + t * w.rows + r, w.rows);
    for (int64_t r = r_begin; r < r_end; ++r)
      for (int64_t t = (r < r_full ? t_full : t_begin); t < t_end; ++t)
        y[t * w.rows + r] = k.dot(w.row(r), xq + t * x_bytes, w.cols);
  }
}

// Row groups handed to threads: packed groups of kPackRows, else kRowGroup rows.
int64_t group_rows(const WeightMatrix& w) { return w.packed ? kPackRows : kRowGroup; }
int64_t num_groups(const WeightMatrix& w) { return (w.rows + group_rows(w) - 1) / group_rows(w); }

// Weights over a batch of tokens are compute-bound: their row groups are handed out dynamically, a few at a
// time, so that a thread slowed down by something else does not keep the other waiting at the end of the region
// (each output is computed the same way whichever thread takes its rows). Decode, and the decode steps of a few
// dozen sequences (below the float tiles' small-batch size, matmul_tiles.h's kSmallBatch), keep one contiguous
// range per thread: they stream the rows from memory, and one long stream per core reads faster than many short
// ones, whose first rows nothing prefetched. 16-way decode on Zen 5, AVX-512: SmolLM2 Q4_1 920-939 -> 997-1037
// tok/s, the 134M F16 model 945-1027 -> 1086-1106 (docs/PERFORMANCE.md).
constexpr int64_t kDynamicMinTokens = 48;
constexpr int64_t kDynamicGrainGroups = 2;

}  // namespace

bool matmul_splits_rows_statically(int64_t num_tokens) { return num_tokens < kDynamicMinTokens; }

namespace {

template <class F>
void for_row_groups(ThreadPool& pool, int64_t num_groups, int64_t num_tokens, F&& fn) {
  if (!matmul_splits_rows_statically(num_tokens))
    pool.parallel_for_dynamic(num_groups, kDynamicGrainGroups, fn);
  else
    pool.parallel_for(num_groups, fn);
}

// Quantized weights: each token's activations quantized once, then one integer dot per (row, token).
void matmul_integer_dot(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool) {
  const ActivationFormat format = activation_format(w.type);
  const QuantKernels k = quant_kernels(w.type, active_isa().isa);
  const uint8_t* xq = quantize_tokens(k, format, x, w.cols, num_tokens, pool);
  const size_t x_bytes = activation_row_bytes(format, w.cols);
  for_row_groups(pool, num_groups(w), num_tokens, [&](int64_t g_begin, int64_t g_end) {
    integer_dot_groups(w, k, xq, x_bytes, num_tokens, y, g_begin, g_end);
  });
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, ThreadPool& pool) {
  if (uses_integer_dot(w.type)) return matmul_integer_dot(w, x, num_tokens, y, pool);
  const kernels::MatmulRowsFn fn = active_isa().fn;
  const int64_t num_groups = (w.rows + kRowGroup - 1) / kRowGroup;
  for_row_groups(pool, num_groups, num_tokens, [&](int64_t g_begin, int64_t g_end) {
    const int64_t r_end = g_end * kRowGroup < w.rows ? g_end * kRowGroup : w.rows;
    fn(w, x, num_tokens, y, g_begin * kRowGroup, r_end);
  });
}

void matmul_many(const WeightMatrix* const* w, float* const* y, int n, const float* x, int64_t num_tokens,
                 ThreadPool& pool) {
  constexpr int kMax = 4;
  bool shared = n >= 1 && n <= kMax, dense = shared;
  for (int i = 0; i < n && (shared || dense); ++i) {
    shared = shared && uses_integer_dot(w[i]->type) && w[i]->cols == w[0]->cols &&
             activation_format(w[i]->type) == activation_format(w[0]->type);
    dense = dense && !uses_integer_dot(w[i]->type);
  }
  if (dense) {  // float weights: one parallel region over every matrix's row groups
    int64_t first_group[kMax + 1] = {0};
    for (int i = 0; i < n; ++i) first_group[i + 1] = first_group[i] + num_groups(*w[i]);
    const kernels::MatmulRowsFn fn = active_isa().fn;
    for_row_groups(pool, first_group[n], num_tokens, [&](int64_t g_begin, int64_t g_end) {
      for (int i = 0; i < n; ++i) {
        const int64_t b = std::max(g_begin, first_group[i]), e = std::min(g_end, first_group[i + 1]);
        if (b < e)
          fn(*w[i], x, num_tokens, y[i], (b - first_group[i]) * kRowGroup,
             std::min((e - first_group[i]) * kRowGroup, w[i]->rows));
      }
    });
    return;
  }
  if (!shared) {
    for (int i = 0; i < n; ++i) matmul(*w[i], x, num_tokens, y[i], pool);
    return;
  }
  const ActivationFormat format = activation_format(w[0]->type);
  QuantKernels k[kMax];
  int64_t first_group[kMax + 1] = {0};  // matrix i owns groups [first_group[i], first_group[i + 1]) of the union
  for (int i = 0; i < n; ++i) {
    k[i] = quant_kernels(w[i]->type, active_isa().isa);
    first_group[i + 1] = first_group[i] + num_groups(*w[i]);
  }
  const uint8_t* xq = quantize_tokens(k[0], format, x, w[0]->cols, num_tokens, pool);
  const size_t x_bytes = activation_row_bytes(format, w[0]->cols);
  for_row_groups(pool, first_group[n], num_tokens, [&](int64_t g_begin, int64_t g_end) {
    for (int i = 0; i < n; ++i) {
      const int64_t b = std::max(g_begin, first_group[i]), e = std::min(g_end, first_group[i + 1]);
      if (b < e) integer_dot_groups(*w[i], k[i], xq, x_bytes, num_tokens, y[i], b - first_group[i], e - first_group[i]);
    }
  });
}

size_t matmul_input_row_bytes(const WeightMatrix& w) {
  return uses_integer_dot(w.type) ? activation_row_bytes(activation_format(w.type), w.cols) : 0;
}

void matmul_prepare_rows(const WeightMatrix& w, const float* x, int64_t t_begin, int64_t t_end, uint8_t* xq) {
  const size_t x_bytes = matmul_input_row_bytes(w);
  if (x_bytes == 0) return;
  const QuantKernels k = quant_kernels(w.type, active_isa().isa);
  for (int64_t t = t_begin; t < t_end; ++t) k.quantize(x + t * w.cols, w.cols, xq + t * x_bytes);
}

int64_t matmul_input_block_cols(const WeightMatrix& w) {
  if (!uses_integer_dot(w.type)) return 0;
  switch (activation_format(w.type)) {
    case ActivationFormat::kQ8_1: return 32;
    case ActivationFormat::kQ8_K: return 256;
    case ActivationFormat::kQ8_0: return 0;
  }
  return 0;
}

void matmul_prepare_cols(const WeightMatrix& w, const float* x, int64_t col_begin, int64_t col_end, uint8_t* xq) {
  const int64_t block_cols = matmul_input_block_cols(w);
  assert(block_cols > 0 && col_begin % block_cols == 0 && col_end % block_cols == 0 && col_end <= w.cols);
  if (col_begin >= col_end) return;
  const size_t block_bytes = matmul_input_row_bytes(w) / static_cast<size_t>(w.cols / block_cols);
  quant_kernels(w.type, active_isa().isa)
      .quantize(x + col_begin, col_end - col_begin, xq + static_cast<size_t>(col_begin / block_cols) * block_bytes);
}

bool matmul_shares_input(const WeightMatrix& a, const WeightMatrix& b) {
  if (a.cols != b.cols || uses_integer_dot(a.type) != uses_integer_dot(b.type)) return false;
  return !uses_integer_dot(a.type) || activation_format(a.type) == activation_format(b.type);
}

int64_t matmul_row_granule(const WeightMatrix& w) { return uses_integer_dot(w.type) ? group_rows(w) : 1; }

void matmul_rows(const WeightMatrix& w, const MatmulInput& in, float* y, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  if (!uses_integer_dot(w.type)) return active_isa().fn(w, in.x, in.num_tokens, y, row_begin, row_end);
  const int64_t g = group_rows(w);
  assert(row_begin % g == 0 && (row_end % g == 0 || row_end == w.rows));
  integer_dot_groups(w, quant_kernels(w.type, active_isa().isa), in.xq, in.x_bytes, in.num_tokens, y, row_begin / g,
                     (row_end + g - 1) / g);
}

std::span<const uint8_t> matmul_row_bytes(const WeightMatrix& w, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return {};
  if (!w.packed) return {w.row(row_begin), static_cast<size_t>(row_end - row_begin) * w.row_bytes};
  const size_t group_bytes = packed_group_bytes(w.type, w.cols);
  const int64_t g_begin = row_begin / kPackRows, g_end = (row_end + kPackRows - 1) / kPackRows;
  return {w.packed + static_cast<size_t>(g_begin) * group_bytes, static_cast<size_t>(g_end - g_begin) * group_bytes};
}

void dequantize_row(const WeightMatrix& w, int64_t r, float* out) { dequantize(w.type, w.row(r), w.cols, out); }

}  // namespace pagoda
