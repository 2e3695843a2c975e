// Weights packed for matmul: the rows of every quantized type interleaved in groups of 16, so that one 512-bit
// register (or two 256-bit ones) holds 4 bytes of each of the 16 rows and every lane of an integer dot is one row.
// A block's integer sum then ends in its row's own lane with no horizontal sum, and its float update (convert,
// scale, fused multiply-add) runs once per 16 rows instead of once per row. This is how quantized weights always run
// in matmul; the row-major file bytes stay the reference (dequantize, embedding rows, the portable dot).
//
// Packed layout of a matrix of R rows and K columns (nb blocks per row), G = ceil(R / 16) groups, each [nb] records
// of 16 rows' block b (rows past R are zero padding). A record holds the block's fields one after the other, each
// interleaved over the 16 rows: 2-byte scales as [16] (d[16], then m / dmin where the type has one), byte fields
// (sub-block scales) as [bytes][16], quants and bit planes in 4-byte units as [units][16][4]. Q8_0, Q4_0, IQ4_NL:
//   uint16_t d[16];                 // f16 scales of rows 16g .. 16g + 15
//   uint8_t  qs[C][16][4];          // qs[c][r] = row r's bytes 4c .. 4c + 3 of the block's qs
// with C = 8 chunks for Q8_0 (signed levels, chunk c = elements 4c .. 4c + 3) and C = 4 for Q4_0 / IQ4_NL (low
// nibbles = elements 4c .. 4c + 3, high nibbles = elements 16 + 4c .. 16 + 4c + 3). Every type's field order is
// in quant_dot_packed.cpp (layout()). A record is as many bytes as the 16 row blocks it holds, so a packed matrix
// takes the bytes of the file's.
//
// The arithmetic is the portable dot's (quant_dot.cpp): per block the exact int32 sums, then the same float
// updates in block order, so a packed result is bitwise the row-major dot in every build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "io/ggml_type.h"
#include "kernels/cpu_features.h"
#include "kernels/cpu/weight_matrix.h"
#include "util/huge_pages.h"

namespace pagoda {

constexpr int kPackRows = 16;

// Whether matmul packs this weight type (every quantized type: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_XS).
bool packs_for_matmul(GgmlType type);
// Bytes of one group's records: nb * 16 * (bytes of one block).
size_t packed_group_bytes(GgmlType type, int64_t cols);
size_t packed_matrix_bytes(GgmlType type, int64_t rows, int64_t cols);
// w's row-major bytes -> out [packed_matrix_bytes] in the layout above.
void pack_rows(const WeightMatrix& w, uint8_t* out);

// Decode's stream ahead (quant_dot_packed_simd.h's NextGroupPrefetch) prefetches the next group's `lines` cache
// lines over the current group's `iterations`: by the end of iteration i (0-based), the first
// next_group_lines_by(i, step, lines) of them, with step = next_group_step(lines, iterations). The count rises by
// about lines / iterations an iteration and reaches `lines` at the last one.
constexpr uint64_t next_group_step(uint64_t lines, int64_t iterations) {  // lines an iteration, 16.16 fixed point
  return (lines << 16) / static_cast<uint64_t>(iterations) + 1;
}
constexpr uint64_t next_group_lines_by(int64_t iteration, uint64_t step, uint64_t lines) {
  const uint64_t by = (static_cast<uint64_t>(iteration + 1) * step) >> 16;
  return by < lines ? by : lines;
}

// Rows 16g .. 16g + n_rows - 1 of one packed group against n_tokens quantized activation rows (Q8_0 format,
// quant_dot.h) x0 + t * x_stride: y[t * y_stride + r] for r < n_rows, t < n_tokens <= max_tokens.
using PackedTileFn = void (*)(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y,
                              int64_t y_stride, int n_tokens, int n_rows);
struct PackedKernels {
  PackedTileFn tile = nullptr;
  int max_tokens = 0;
};
PackedKernels packed_kernels_portable(GgmlType type);
PackedKernels packed_kernels_avx2(GgmlType type);
PackedKernels packed_kernels_avx512(GgmlType type);  // needs avx512_vnni
// The kernels for `isa`, falling back to narrower builds.
PackedKernels packed_kernels(GgmlType type, KernelIsa isa);

// Owner of a model's packed copies. pack() points w.packed at a new copy when the type packs (else does nothing).
// The copies lie end to end in arenas of huge-page memory (util/huge_pages.h): decode streams every matrix once a
// token, and a 576 x 576 Q4_1 matrix alone would be 50 pages of 4 KiB.
class PackedWeights {
 public:
  void pack(WeightMatrix& w);
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* allocate(size_t bytes);  // 64-byte aligned, from the last arena or a new one
  std::vector<HugePageBuffer> arenas_;
  size_t used_ = 0;  // bytes taken from the last arena
  size_t bytes_ = 0;
};

}  // namespace pagoda
