// GPT-2: learned absolute positions, LayerNorm with bias, biases on every projection, a fused QKV projection and a
// GELU MLP (gelu_new, the tanh form). Hugging Face stores the projections as Conv1D ([in, out]): transposed on load.
// The head is tied to the token embedding.
#include "model/arch/arch_spec.h"

namespace pagoda {

extern const ArchSpec kGpt2Arch = {
    .name = "gpt2",
    .hf_model_type = "gpt2",
    .norm = NormKind::kLayer,
    .positions = PositionKind::kLearned,
    .mlp = MlpKind::kGelu,
    .gelu = GeluKind::kTanh,
    .fused_qkv = true,
    .qkv_bias = true,
    .out_bias = true,
    .mlp_bias = true,
    .tied_output_default = true,
    .tensors =
        {
            {"token_embd.weight", "transformer.wte.weight"},
            {"position_embd.weight", "transformer.wpe.weight"},
            {"output_norm.weight", "transformer.ln_f.weight"},
            {"output_norm.bias", "transformer.ln_f.bias"},
            {"output.weight", "lm_head.weight"},
            {"blk.{L}.attn_norm.weight", "transformer.h.{L}.ln_1.weight"},
            {"blk.{L}.attn_norm.bias", "transformer.h.{L}.ln_1.bias"},
            {"blk.{L}.attn_qkv.weight", "transformer.h.{L}.attn.c_attn.weight", HfTransform::kTranspose},
            {"blk.{L}.attn_qkv.bias", "transformer.h.{L}.attn.c_attn.bias"},
            {"blk.{L}.attn_output.weight", "transformer.h.{L}.attn.c_proj.weight", HfTransform::kTranspose},
            {"blk.{L}.attn_output.bias", "transformer.h.{L}.attn.c_proj.bias"},
            {"blk.{L}.ffn_norm.weight", "transformer.h.{L}.ln_2.weight"},
            {"blk.{L}.ffn_norm.bias", "transformer.h.{L}.ln_2.bias"},
            {"blk.{L}.ffn_up.weight", "transformer.h.{L}.mlp.c_fc.weight", HfTransform::kTranspose},
            {"blk.{L}.ffn_up.bias", "transformer.h.{L}.mlp.c_fc.bias"},
            {"blk.{L}.ffn_down.weight", "transformer.h.{L}.mlp.c_proj.weight", HfTransform::kTranspose},
            {"blk.{L}.ffn_down.bias", "transformer.h.{L}.mlp.c_proj.bias"},
        },
    .hf_config = {.context_length = "n_positions",
                  .hidden_size = "n_embd",
                  .num_layers = "n_layer",
                  .intermediate_size = "n_inner",
                  .num_heads = "n_head",
                  .num_kv_heads = nullptr,
                  .norm_eps = "layer_norm_epsilon",
                  .rope_theta = nullptr,
                  .activation = "activation_function"},
};

}  // namespace pagoda
