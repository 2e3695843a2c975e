// Qwen2 / Qwen2.5: Llama's layout with biases on Q, K and V, NeoX pairing, and (small sizes) a tied head.
#include "model/arch/arch_spec.h"

namespace pagoda {

extern const ArchSpec kQwen2Arch = {
    .name = "qwen2",
    .hf_model_type = "qwen2",
    .rope = RopeType::kNeox,
    .hf_rope = RopeType::kNeox,
    .qkv_bias = true,
    .tensors =
        {
            {"token_embd.weight", "model.embed_tokens.weight"},
            {"output_norm.weight", "model.norm.weight"},
            {"output.weight", "lm_head.weight"},
            {"blk.{L}.attn_norm.weight", "model.layers.{L}.input_layernorm.weight"},
            {"blk.{L}.attn_q.weight", "model.layers.{L}.self_attn.q_proj.weight"},
            {"blk.{L}.attn_q.bias", "model.layers.{L}.self_attn.q_proj.bias"},
            {"blk.{L}.attn_k.weight", "model.layers.{L}.self_attn.k_proj.weight"},
            {"blk.{L}.attn_k.bias", "model.layers.{L}.self_attn.k_proj.bias"},
            {"blk.{L}.attn_v.weight", "model.layers.{L}.self_attn.v_proj.weight"},
            {"blk.{L}.attn_v.bias", "model.layers.{L}.self_attn.v_proj.bias"},
            {"blk.{L}.attn_output.weight", "model.layers.{L}.self_attn.o_proj.weight"},
            {"blk.{L}.ffn_norm.weight", "model.layers.{L}.post_attention_layernorm.weight"},
            {"blk.{L}.ffn_gate.weight", "model.layers.{L}.mlp.gate_proj.weight"},
            {"blk.{L}.ffn_up.weight", "model.layers.{L}.mlp.up_proj.weight"},
            {"blk.{L}.ffn_down.weight", "model.layers.{L}.mlp.down_proj.weight"},
        },
};

}  // namespace pagoda
