// Encoding f32 values into the quantized file types, for `pagoda synth --dtype` and `pagoda convert --dtype`
// (benchmark models without llama.cpp). Every type follows ggml's reference quantizer, what llama-quantize writes
// without an importance matrix: Q4_0..Q8_0 directly here, the K-quants' scale searches in io/quantize_k_quants.h,
// IQ4_NL and IQ4_XS in io/quantize_iq4.h. Which type each tensor gets is io/quant_preset.h's business.
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

}  // namespace pagoda
