// Conversion of weight rows to f32: the reference meaning of every supported file type (io/quant_blocks.h).
// Embedding lookups use it, as do the portable matmul and the tests that check the integer-dot kernels.
#pragma once

#include <cstdint>

#include "io/ggml_type.h"

namespace pagoda {

// n elements of `type` at `src` (n a multiple of the type's block size) -> out [n].
void dequantize(GgmlType type, const uint8_t* src, int64_t n, float* out);

}  // namespace pagoda
