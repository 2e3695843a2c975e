// Tensor element types as numbered by ggml/GGUF (llama.cpp da46e59), with their block layout. A row of n elements
// of a block-quantized type holds n / block_elems blocks of block_bytes each (layouts: io/quant_blocks.h). Every
// type ggml defines is named, so a file with one pagoda cannot run gets an error naming it.
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
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
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
// Parses a supported type's name ("f32", "q4_k", "iq4_nl"...; case-insensitive).
std::optional<GgmlType> parse_ggml_type(const std::string& name);

// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t ggml_row_bytes(const GgmlTypeTraits& t, uint64_t n) { return n / t.block_elems * t.block_bytes; }
// The supported types' names, comma-separated, for error messages.
std::string supported_type_names();

}  // namespace pagoda
