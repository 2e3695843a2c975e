// Tensor element types as numbered by ggml/GGUF, with their block layout. A row of n elements of a
// block-quantized type holds n / block_elems blocks of block_bytes each. Adding a type (Q4_0, Q4_K,
// Q6_K...) means adding a row to the table in ggml_type.cpp and a kernel; nothing else changes shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace pagoda {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct GgmlTypeTraits {
  GgmlType type;
  const char* name;
  uint32_t block_elems;  // elements per block (1 for plain float types)
  uint32_t block_bytes;  // bytes per block
  bool supported;        // pagoda has kernels for it
};

// Traits of a type id read from a file, or nullopt if the id is unknown.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
const GgmlTypeTraits& ggml_type_traits(GgmlType type);
std::string ggml_type_name(uint32_t type_id);
// Parses "f32", "f16", "bf16", "q8_0" (case-insensitive).
std::optional<GgmlType> parse_ggml_type(const std::string& name);

// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t ggml_row_bytes(const GgmlTypeTraits& t, uint64_t n) { return n / t.block_elems * t.block_bytes; }

// Q8_0: 32 int8 values with one f16 scale.
constexpr uint32_t kQ8_0BlockElems = 32;
struct BlockQ8_0 {
  uint16_t scale_f16;
  int8_t q[kQ8_0BlockElems];
};
static_assert(sizeof(BlockQ8_0) == 34);

}  // namespace pagoda
