// Encoding f32 values into the quantized file types, for `pagoda synth --dtype` (benchmark models without llama.cpp).
// The 32-element types follow ggml's reference quantizers (what llama-quantize writes without an importance
// matrix); Q4_K and Q6_K use a plain min/max choice of sub-block scales rather than llama-quantize's search, so
// their error is somewhat larger than llama-quantize's (docs/kernels.md).
#pragma once

#include <cstdint>
#include <vector>

#include "io/ggml_type.h"
#include "util/result.h"

namespace pagoda {

// Whether quantize_values can write `type`.
bool can_quantize(GgmlType type);
// n values (a multiple of the type's block size) -> the type's bytes.
Result<std::vector<uint8_t>> quantize_values(GgmlType type, const float* x, int64_t n);

// f32 values -> `type`'s bytes: F32, F16 and BF16 directly, the quantized types through quantize_values.
Result<std::vector<uint8_t>> encode_f32_values(GgmlType type, const std::vector<float>& values);

// llama.cpp's general.file_type for a file of "mostly `type`" matrices (15 for the Q4_K_M mix; 0 when unnamed).
uint32_t gguf_file_type(GgmlType type, bool q4_k_m = false);

}  // namespace pagoda
