// Packing, the portable packed kernel (the layout read back one row at a time, with the portable dot's
// arithmetic) and dispatch.
#include "kernels/cpu/quant_dot_packed.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "io/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_combine.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

size_t block_bytes(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return sizeof(BlockQ8_0);
    case GgmlType::Q4_0: return sizeof(BlockQ4_0);
    case GgmlType::IQ4_NL: return sizeof(BlockIQ4_NL);
    default: return 0;
  }
}
int chunks(GgmlType type) { return type == GgmlType::Q8_0 ? 8 : 4; }

// Level i (< 32) of row r in a record: the byte holding it, then the type's reading of that byte.
int packed_level(GgmlType type, const uint8_t* record, int r, int i) {
  const uint8_t* qs = record + 2 * kPackRows;
  if (type == GgmlType::Q8_0) return static_cast<int8_t>(qs[(i / 4) * 64 + 4 * r + i % 4]);
  const int j = i % 16;
  const uint8_t byte = qs[(j / 4) * 64 + 4 * r + j % 4];
  const int q = i < 16 ? (byte & 0xF) : (byte >> 4);
  return type == GgmlType::Q4_0 ? q - 8 : static_cast<int>(kIQ4Values[q]);
}

template <GgmlType kType>
void tile_portable(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
                   int n_tokens, int n_rows) {
  const int64_t nb = K / kQK;
  const size_t record = kPackRows * block_bytes(kType);
  for (int t = 0; t < n_tokens; ++t) {
    const auto* x = reinterpret_cast<const BlockQ8_0*>(x0 + t * x_stride);
    for (int r = 0; r < n_rows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* rec = group + b * record;
        int32_t sum = 0;
        for (int i = 0; i < kQK; ++i) sum += packed_level(kType, rec, r, i) * x[b].qs[i];
        uint16_t d;
        std::memcpy(&d, rec + 2 * r, sizeof d);
        acc = quant_combine::block_exact_update(acc, sum, f16_to_f32(d), f16_to_f32(x[b].d));
      }
      y[t * y_stride + r] = acc;
    }
  }
}

}  // namespace

bool packs_for_matmul(GgmlType type) { return block_bytes(type) != 0; }

size_t packed_group_bytes(GgmlType type, int64_t cols) {
  return static_cast<size_t>(cols / kQK) * kPackRows * block_bytes(type);
}

size_t packed_matrix_bytes(GgmlType type, int64_t rows, int64_t cols) {
  return static_cast<size_t>((rows + kPackRows - 1) / kPackRows) * packed_group_bytes(type, cols);
}

void pack_rows(const WeightMatrix& w, uint8_t* out) {
  const size_t bb = block_bytes(w.type), record = kPackRows * bb;
  const int64_t nb = w.cols / kQK, groups = (w.rows + kPackRows - 1) / kPackRows;
  const int n_chunks = chunks(w.type);
  std::memset(out, 0, packed_matrix_bytes(w.type, w.rows, w.cols));
  for (int64_t g = 0; g < groups; ++g)
    for (int r = 0; r < kPackRows && g * kPackRows + r < w.rows; ++r) {
      const uint8_t* row = w.row(g * kPackRows + r);
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = row + b * bb;  // every one of these blocks starts with its f16 d, then qs
        uint8_t* rec = out + (g * nb + b) * record;
        std::memcpy(rec + 2 * r, blk, 2);
        for (int c = 0; c < n_chunks; ++c) std::memcpy(rec + 2 * kPackRows + 64 * c + 4 * r, blk + 2 + 4 * c, 4);
      }
    }
}

PackedKernels packed_kernels_portable(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return {tile_portable<GgmlType::Q8_0>, 64};
    case GgmlType::Q4_0: return {tile_portable<GgmlType::Q4_0>, 64};
    case GgmlType::IQ4_NL: return {tile_portable<GgmlType::IQ4_NL>, 64};
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

void PackedWeights::AlignedFree::operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t{64}); }

void PackedWeights::pack(WeightMatrix& w) {
  if (!packs_for_matmul(w.type) || w.packed) return;
  const size_t bytes = packed_matrix_bytes(w.type, w.rows, w.cols);
  std::unique_ptr<uint8_t, AlignedFree> buffer(static_cast<uint8_t*>(::operator new(bytes, std::align_val_t{64})));
  pack_rows(w, buffer.get());
  w.packed = buffer.get();
  buffers_.push_back(std::move(buffer));
  bytes_ += bytes;
}

}  // namespace pagoda
