// `pagoda convert`: a Hugging Face folder written as the GGUF file llama.cpp's convert_hf_to_gguf.py would write:
// the same metadata keys, tensor names and layouts (Llama's Q/K rows permuted for interleaved RoPE, GPT-2's Conv1D
// transposed, GPT-NeoX's QKV regrouped: model/hf_folder.h), the tokenizer as GGUF tokenizer.ggml.* keys, and the
// weights in the requested type: vectors (norms, biases) stay F32 as llama.cpp keeps them; matrices take the type
// a llama-quantize preset (io/quant_preset.h: q4_k_m, q3_k_s, iq4_xs, ...) gives them without an importance matrix,
// falling back where their rows are not a whole number of blocks the way llama-quantize does.
#pragma once

#include <string>

#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "util/result.h"

namespace pagoda {

// dtype: a preset name (quant_preset_names()), case-insensitive.
Result<GgufWriter> convert_to_gguf(const GgufFile& folder_as_gguf, const std::string& dtype);

}  // namespace pagoda
