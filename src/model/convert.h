// `pagoda convert`: a Hugging Face folder written as the GGUF file llama.cpp's convert_hf_to_gguf.py would write:
// the same metadata keys, tensor names and layouts (Llama's Q/K rows permuted for interleaved RoPE, GPT-2's Conv1D
// transposed, GPT-NeoX's QKV regrouped: model/hf_folder.h), the tokenizer as GGUF tokenizer.ggml.* keys, and the
// weights in the requested type: vectors (norms, biases) stay F32 as llama.cpp keeps them; matrices take the type,
// falling back where their rows are not a whole number of blocks (Q8_0 -> F16; Q4_K -> Q5_0, Q6_K -> Q8_0 -> F16)
// the way llama.cpp's tools do. q4_k_m is llama-quantize's mix without an importance matrix (io/quantize.h).
#pragma once

#include <string>

#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "util/result.h"

namespace pagoda {

// dtype: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q6_k or q4_k_m.
Result<GgufWriter> convert_to_gguf(const GgufFile& folder_as_gguf, const std::string& dtype);

}  // namespace pagoda
