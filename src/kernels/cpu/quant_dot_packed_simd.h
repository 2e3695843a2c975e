// What the SIMD packed kernels (quant_dot_packed_avx2.cpp, quant_dot_packed_avx512.cpp) share: reading one token's
// side of block b from a Q8_0 activation row (quant_dot.h) and the record geometry. Include only from those files.
#pragma once

#include <cstdint>
#include <cstring>

#include "io/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_packed.h"

namespace pagoda::quant_packed {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float load_f32(const void* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One activation row's blocks, block sums and scales.
struct TokenRow {
  const uint8_t* blocks;  // [nb] BlockQ8_0
  const uint8_t* block_sums;
  const uint8_t* scales;
  TokenRow(const uint8_t* row, int64_t K) {
    const Q8_0Row r = q8_0_row(const_cast<uint8_t*>(row), K);
    blocks = row;
    block_sums = r.block_sums;
    scales = r.scales;
  }
  const int8_t* qs(int64_t b) const { return reinterpret_cast<const BlockQ8_0*>(blocks)[b].qs; }
  int32_t block_sum(int64_t b) const { return load_i32(block_sums + 4 * b); }
  float scale(int64_t b) const { return load_f32(scales + 4 * b); }
};

// Bytes of one record (16 rows' block b): the 16 f16 scales, then the chunks of 64 bytes.
constexpr size_t record_bytes(int chunks) { return 2 * kPackRows + 64 * static_cast<size_t>(chunks); }

// Which 4 activation bytes level vector i multiplies: Q8_0's 8 chunks are elements 4i..; a nibble type's chunk c
// gives vector 2c (low nibbles, elements 4c..) and 2c + 1 (high nibbles, elements 16 + 4c..).
constexpr int x_offset_q8(int i) { return 4 * i; }
constexpr int x_offset_nibbles(int i) { return i % 2 == 0 ? 4 * (i / 2) : 16 + 4 * (i / 2); }

}  // namespace pagoda::quant_packed
