// llama-quantize's presets ("q4_k_m", "q3_k_s", "iq4_xs", ...) and the tensor type each picks, as llama.cpp
// da46e59's llama_tensor_get_type does without an importance matrix, for `pagoda synth --dtype` and
// `pagoda convert --dtype`:
//  - output.weight (token_embd.weight when the model has no output.weight) is Q6_K unless the preset is Q8_0, or Q8_0
//    when its rows are not a whole number of the preset type's blocks (or the architecture is Falcon);
//  - attn_v (attn_qkv), ffn_down and attn_output go up a type in some presets, some only in the layers where
//    llama.cpp spends more bits (use_more_bits: the first and last eighth and every third layer between), some
//    depending on the grouped-query factor n_head / n_head_kv or an 8-expert MoE;
//  - a tensor whose rows are not a whole number of its type's blocks falls back: Q2_K, Q3_K -> Q4_0, IQ4_XS -> IQ4_NL,
//    Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 when even that block does not divide the row (llama-quantize
//    refuses a Q4_0..Q8_0 or IQ4_NL row it cannot tile; pagoda writes it F16, what `--tensor-type X=f16` would).
// llama.cpp counts attn_v and ffn_down tensors in file order; here the layer number comes from the tensor's name,
// the same for dense models. Its 70B-only attn_v rule (LLM_TYPE_70B) is left out.
// The plain K types (q2_k is the Q2_K preset; q3_k, q4_k, q5_k) are llama-quantize --pure: every quantized
// tensor that type, with the fallbacks only. f32, f16 and bf16 write every matrix in that type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "io/ggml_type.h"

namespace pagoda {

struct QuantPreset {
  const char* name;    // as users type it (lower case; lookups ignore case)
  GgmlType base;       // the type of most matrices
  uint32_t file_type;  // llama_ftype, written as general.file_type
  bool mix;            // false: every quantized tensor `base` (the float types, --pure)
};

// The preset of a name, case-insensitive; nullopt if unknown.
std::optional<QuantPreset> find_quant_preset(const std::string& name);
// Every preset name, comma-separated, for usage text and errors.
std::string quant_preset_names();
// Whether the preset writes quantized tensors (not f32, f16, bf16).
bool is_quantized_preset(const QuantPreset& preset);

// What the rules look at besides a tensor's name and row length.
struct QuantModelShape {
  std::string arch = "llama";
  int64_t n_layer = 1;
  int64_t n_head = 1;
  int64_t n_head_kv = 1;
  int64_t n_expert = 0;
  bool has_output = true;  // false: tied embeddings, so token_embd.weight takes output.weight's rule
};

// Whether llama-quantize quantizes a tensor at all: 2-D or more, named *weight, not a norm, not position_embd
// (nor a MoE router); others keep a float type.
bool is_quantizable_tensor(const std::string& name, uint32_t n_dims);

// The type the preset gives a quantizable tensor whose rows hold `row_length` elements (ne[0]).
GgmlType quant_tensor_type(const QuantPreset& preset, const QuantModelShape& model, const std::string& name,
                           uint64_t row_length);

// The type written for a row length that `type`'s blocks do not tile (llama-quantize's fallback, then F16).
GgmlType fallback_type(GgmlType type, uint64_t row_length);

}  // namespace pagoda
