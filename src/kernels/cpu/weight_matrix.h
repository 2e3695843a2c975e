// A 2-D weight tensor viewed in place, in its file type (no conversion to f32 at load time).
#pragma once

#include <cstddef>
#include <cstdint>

#include "io/ggml_type.h"

namespace pagoda {

struct WeightMatrix {
  const uint8_t* data = nullptr;  // [rows][row_bytes], row-major as in GGUF (ne[0] = cols is contiguous)
  GgmlType type = GgmlType::F32;
  int64_t cols = 0;      // inner (reduction) dimension K
  int64_t rows = 0;      // output features N
  size_t row_bytes = 0;  // bytes of one row of `cols` elements in `type`
  // The rows interleaved for matmul (quant_dot_packed.h), owned by the model's PackedWeights; nullptr: matmul runs
  // on `data` row by row.
  const uint8_t* packed = nullptr;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

}  // namespace pagoda
