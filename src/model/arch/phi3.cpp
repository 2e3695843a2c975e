// Phi-3 (mini, 4k context): RMSNorm, NeoX pairing, one fused QKV projection and one fused gate/up projection
// (rows [gate | up]). Long-rope scaling (the 128k variants) is refused by the hyperparameter reader.
#include "model/arch/arch_spec.h"

namespace pagoda {

extern const ArchSpec kPhi3Arch = {
    .name = "phi3",
    .hf_model_type = "phi3",
    .rope = RopeType::kNeox,
    .hf_rope = RopeType::kNeox,
    .fused_qkv = true,
    .fused_gate_up = true,
    .tensors =
        {
            {"token_embd.weight", "model.embed_tokens.weight"},
            {"output_norm.weight", "model.norm.weight"},
            {"output.weight", "lm_head.weight"},
            {"blk.{L}.attn_norm.weight", "model.layers.{L}.input_layernorm.weight"},
            {"blk.{L}.attn_qkv.weight", "model.layers.{L}.self_attn.qkv_proj.weight"},
            {"blk.{L}.attn_output.weight", "model.layers.{L}.self_attn.o_proj.weight"},
            {"blk.{L}.ffn_norm.weight", "model.layers.{L}.post_attention_layernorm.weight"},
            {"blk.{L}.ffn_up.weight", "model.layers.{L}.mlp.gate_up_proj.weight"},
            {"blk.{L}.ffn_down.weight", "model.layers.{L}.mlp.down_proj.weight"},
        },
};

}  // namespace pagoda
