// Packing, the portable packed kernel (each row read back from the records into its file bytes, then the portable
// dot) and dispatch.
#include "kernels/cpu/quant_dot_packed.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "io/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"

namespace pagoda {
namespace {

// A block's bytes as fields, each interleaved over the 16 rows in units of `unit` bytes: the field's bytes
// [offset, offset + length) of row r go to [length / unit][16][unit] at the field's place in the record; fields
// follow each other in block order.
struct Field {
  int offset, length, unit;
};
struct Layout {
  Field fields[5];
  int n_fields;
  int block_bytes;
  int block_elems;
};

const Layout* layout(GgmlType type) {
  static const Layout q8_0{{{0, 2, 2}, {2, 32, 4}}, 2, 34, 32};
  static const Layout q4_0{{{0, 2, 2}, {2, 16, 4}}, 2, 18, 32};  // also IQ4_NL: f16 d, then 16 bytes of nibbles
  static const Layout q4_1{{{0, 2, 2}, {2, 2, 2}, {4, 16, 4}}, 3, 20, 32};              // d, m, qs
  static const Layout q5_0{{{0, 2, 2}, {2, 4, 4}, {6, 16, 4}}, 3, 22, 32};              // d, qh, qs
  static const Layout q5_1{{{0, 2, 2}, {2, 2, 2}, {4, 4, 4}, {8, 16, 4}}, 4, 24, 32};  // d, m, qh, qs
  // Q2_K: d, dmin, scales (byte k of every row together), qs. Q3_K: d, hmask, qs, scales (its file order is hmask,
  // qs, scales, d).
  static const Layout q2_k{{{80, 2, 2}, {82, 2, 2}, {0, 16, 1}, {16, 64, 4}}, 4, 84, 256};
  static const Layout q3_k{{{108, 2, 2}, {0, 32, 4}, {32, 64, 4}, {96, 12, 1}}, 4, 110, 256};
  static const Layout q4_k{{{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 128, 4}}, 4, 144, 256};
  // IQ4_XS: d, scales_h, scales_l, qs (sub-block j: bytes 16j.., low nibbles its first 16 elements).
  static const Layout iq4_xs{{{0, 2, 2}, {2, 2, 2}, {4, 4, 1}, {8, 128, 4}}, 4, 136, 256};
  static const Layout q5_k{{{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 32, 4}, {48, 128, 4}}, 5, 176, 256};
  // Q6_K: d, scales, ql, qh (its file order is ql, qh, scales, d).
  static const Layout q6_k{{{208, 2, 2}, {192, 16, 1}, {0, 128, 4}, {128, 64, 4}}, 4, 210, 256};
  switch (type) {
    case GgmlType::Q8_0: return &q8_0;
    case GgmlType::Q4_0:
    case GgmlType::IQ4_NL: return &q4_0;
    case GgmlType::Q4_1: return &q4_1;
    case GgmlType::Q5_0: return &q5_0;
    case GgmlType::Q5_1: return &q5_1;
    case GgmlType::Q2_K: return &q2_k;
    case GgmlType::Q3_K: return &q3_k;
    case GgmlType::Q4_K: return &q4_k;
    case GgmlType::Q5_K: return &q5_k;
    case GgmlType::IQ4_XS: return &iq4_xs;
    case GgmlType::Q6_K: return &q6_k;
    default: return nullptr;
  }
}

// Row r's block <-> its bytes in a record, field by field (kToRecord: pack; else read back).
template <bool kToRecord>
void copy_block(const Layout& l, int r, uint8_t* record, uint8_t* block) {
  size_t base = 0;
  for (int f = 0; f < l.n_fields; ++f) {
    const Field& field = l.fields[f];
    for (int j = 0; j < field.length; j += field.unit) {
      uint8_t* in_record = record + base + static_cast<size_t>(j / field.unit) * kPackRows * field.unit + r * field.unit;
      if constexpr (kToRecord)
        std::memcpy(in_record, block + field.offset + j, field.unit);
      else
        std::memcpy(block + field.offset + j, in_record, field.unit);
    }
    base += static_cast<size_t>(field.length) * kPackRows;
  }
}

// The portable packed kernel: each row read back from the records, then the portable row-major dot (the
// definition of the bits).
void tile_portable(GgmlType type, const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y,
                   int64_t y_stride, int n_tokens, int n_rows) {
  const Layout& l = *layout(type);
  const int64_t nb = K / l.block_elems;
  const size_t record = static_cast<size_t>(kPackRows) * l.block_bytes;
  std::vector<uint8_t> row(static_cast<size_t>(nb) * l.block_bytes);
  const QuantDotFn dot = quant_dot_portable(type);
  for (int r = 0; r < n_rows; ++r) {
    for (int64_t b = 0; b < nb; ++b)
      copy_block<false>(l, r, const_cast<uint8_t*>(group + b * record), row.data() + b * l.block_bytes);
    for (int t = 0; t < n_tokens; ++t) y[t * y_stride + r] = dot(row.data(), x0 + t * x_stride, K);
  }
}
template <GgmlType kType>
void tile_portable(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                   int n_tokens, int n_rows) {
  tile_portable(kType, group, x0, x_stride, K, y, y_stride, n_tokens, n_rows);
}

}  // namespace

bool packs_for_matmul(GgmlType type) { return layout(type) != nullptr; }

size_t packed_group_bytes(GgmlType type, int64_t cols) {
  const Layout& l = *layout(type);
  return static_cast<size_t>(cols / l.block_elems) * kPackRows * l.block_bytes;
}

size_t packed_matrix_bytes(GgmlType type, int64_t rows, int64_t cols) {
  return static_cast<size_t>((rows + kPackRows - 1) / kPackRows) * packed_group_bytes(type, cols);
}

void pack_rows(const WeightMatrix& w, uint8_t* out) {
  const Layout& l = *layout(w.type);
  const size_t record = static_cast<size_t>(kPackRows) * l.block_bytes;
  const int64_t nb = w.cols / l.block_elems, groups = (w.rows + kPackRows - 1) / kPackRows;
  std::memset(out, 0, packed_matrix_bytes(w.type, w.rows, w.cols));
  for (int64_t g = 0; g < groups; ++g)
    for (int r = 0; r < kPackRows && g * kPackRows + r < w.rows; ++r) {
      const uint8_t* row = w.row(g * kPackRows + r);
      for (int64_t b = 0; b < nb; ++b)
        copy_block<true>(l, r, out + (g * nb + b) * record, const_cast<uint8_t*>(row + b * l.block_bytes));
    }
}

PackedKernels packed_kernels_portable(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return {tile_portable<GgmlType::Q8_0>, 64};
    case GgmlType::Q4_0: return {tile_portable<GgmlType::Q4_0>, 64};
    case GgmlType::IQ4_NL: return {tile_portable<GgmlType::IQ4_NL>, 64};
    case GgmlType::Q4_1: return {tile_portable<GgmlType::Q4_1>, 64};
    case GgmlType::Q5_0: return {tile_portable<GgmlType::Q5_0>, 64};
    case GgmlType::Q5_1: return {tile_portable<GgmlType::Q5_1>, 64};
    case GgmlType::Q2_K: return {tile_portable<GgmlType::Q2_K>, 64};
    case GgmlType::Q3_K: return {tile_portable<GgmlType::Q3_K>, 64};
    case GgmlType::Q4_K: return {tile_portable<GgmlType::Q4_K>, 64};
    case GgmlType::Q5_K: return {tile_portable<GgmlType::Q5_K>, 64};
    case GgmlType::IQ4_XS: return {tile_portable<GgmlType::IQ4_XS>, 64};
    case GgmlType::Q6_K: return {tile_portable<GgmlType::Q6_K>, 64};
    default: return {};
  }
}

PackedKernels packed_kernels(GgmlType type, KernelIsa isa) {
  PackedKernels k;
  if (isa == KernelIsa::kAvx512 && cpu_features().avx512_vnni) k = packed_kernels_avx512(type);
  if (!k.tile && (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx2)) k = packed_kernels_avx2(type);
  if (!k.tile) k = packed_kernels_portable(type);
  return k;
}

namespace {
constexpr size_t kArenaBytes = size_t{32} << 20;  // a model's copies in a few arenas; an unused tail is never touched
}  // namespace

uint8_t* PackedWeights::allocate(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (arenas_.empty() || arenas_.back().size() - used_ < bytes) {
    HugePageBuffer arena = HugePageBuffer::allocate(std::max(bytes, kArenaBytes));
    if (arena.data() == nullptr) throw std::bad_alloc();
    arenas_.push_back(std::move(arena));
    used_ = 0;
  }
  uint8_t* p = arenas_.back().data() + used_;
  used_ += bytes;
  return p;
}

void PackedWeights::pack(WeightMatrix& w) {
  if (!packs_for_matmul(w.type) || w.packed) return;
  const size_t bytes = packed_matrix_bytes(w.type, w.rows, w.cols);
  uint8_t* buffer = allocate(bytes);
  pack_rows(w, buffer);
  w.packed = buffer;
  bytes_ += bytes;
}

}  // namespace pagoda
