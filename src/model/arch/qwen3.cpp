// Qwen3 (dense): Llama's layout with a per-head RMSNorm of Q and K before RoPE, no biases, NeoX pairing, and an
// explicit head_dim that need not be hidden_size / num_heads.
#include "model/arch/arch_spec.h"

namespace pagoda {

extern const ArchSpec kQwen3Arch = {
    .name = "qwen3",
    .hf_model_type = "qwen3",
    .rope = RopeType::kNeox,
    .hf_rope = RopeType::kNeox,
    .qk_norm = true,
    .tensors =
        {
            {"token_embd.weight", "model.embed_tokens.weight"},
            {"output_norm.weight", "model.norm.weight"},
            {"output.weight", "lm_head.weight"},
            {"blk.{L}.attn_norm.weight", "model.layers.{L}.input_layernorm.weight"},
            {"blk.{L}.attn_q.weight", "model.layers.{L}.self_attn.q_proj.weight"},
            {"blk.{L}.attn_k.weight", "model.layers.{L}.self_attn.k_proj.weight"},
            {"blk.{L}.attn_v.weight", "model.layers.{L}.self_attn.v_proj.weight"},
            {"blk.{L}.attn_q_norm.weight", "model.layers.{L}.self_attn.q_norm.weight"},
            {"blk.{L}.attn_k_norm.weight", "model.layers.{L}.self_attn.k_norm.weight"},
            {"blk.{L}.attn_output.weight", "model.layers.{L}.self_attn.o_proj.weight"},
            {"blk.{L}.ffn_norm.weight", "model.layers.{L}.post_attention_layernorm.weight"},
            {"blk.{L}.ffn_gate.weight", "model.layers.{L}.mlp.gate_proj.weight"},
            {"blk.{L}.ffn_up.weight", "model.layers.{L}.mlp.up_proj.weight"},
            {"blk.{L}.ffn_down.weight", "model.layers.{L}.mlp.down_proj.weight"},
        },
};

}  // namespace pagoda
