// GPT-NeoX (Pythia): LayerNorm with bias, biases on every projection, parallel residual
// (x + attn(ln1(x)) + mlp(ln2(x))), partial rotary (rotary_pct of each head, NeoX pairing), a GELU MLP (exact erf
// form: Pythia's hidden_act "gelu") and a fused QKV projection that Hugging Face interleaves per head.
#include "model/arch/arch_spec.h"

namespace pagoda {

extern const ArchSpec kGptNeoxArch = {
    .name = "gptneox",
    .hf_model_type = "gpt_neox",
    .norm = NormKind::kLayer,
    .rope = RopeType::kNeox,
    .hf_rope = RopeType::kNeox,
    .mlp = MlpKind::kGelu,
    .gelu = GeluKind::kExact,
    .fused_qkv = true,
    .qkv_bias = true,
    .out_bias = true,
    .mlp_bias = true,
    .parallel_residual = true,
    .tensors =
        {
            {"token_embd.weight", "gpt_neox.embed_in.weight"},
            {"output_norm.weight", "gpt_neox.final_layer_norm.weight"},
            {"output_norm.bias", "gpt_neox.final_layer_norm.bias"},
            {"output.weight", "embed_out.weight"},
            {"blk.{L}.attn_norm.weight", "gpt_neox.layers.{L}.input_layernorm.weight"},
            {"blk.{L}.attn_norm.bias", "gpt_neox.layers.{L}.input_layernorm.bias"},
            {"blk.{L}.attn_qkv.weight", "gpt_neox.layers.{L}.attention.query_key_value.weight", HfTransform::kNeoxQkv},
            {"blk.{L}.attn_qkv.bias", "gpt_neox.layers.{L}.attention.query_key_value.bias", HfTransform::kNeoxQkv},
            {"blk.{L}.attn_output.weight", "gpt_neox.layers.{L}.attention.dense.weight"},
            {"blk.{L}.attn_output.bias", "gpt_neox.layers.{L}.attention.dense.bias"},
            {"blk.{L}.ffn_norm.weight", "gpt_neox.layers.{L}.post_attention_layernorm.weight"},
            {"blk.{L}.ffn_norm.bias", "gpt_neox.layers.{L}.post_attention_layernorm.bias"},
            {"blk.{L}.ffn_up.weight", "gpt_neox.layers.{L}.mlp.dense_h_to_4h.weight"},
            {"blk.{L}.ffn_up.bias", "gpt_neox.layers.{L}.mlp.dense_h_to_4h.bias"},
            {"blk.{L}.ffn_down.weight", "gpt_neox.layers.{L}.mlp.dense_4h_to_h.weight"},
            {"blk.{L}.ffn_down.bias", "gpt_neox.layers.{L}.mlp.dense_4h_to_h.bias"},
        },
    .hf_config = {.norm_eps = "layer_norm_eps", .rope_theta = "rotary_emb_base"},
};

}  // namespace pagoda
