// Llama (and Mistral-style models that share its layout): RMSNorm, SwiGLU, RoPE, grouped-query attention.
// Hugging Face stores Q and K for rotate_half (NeoX pairing); GGUF stores them permuted for interleaved pairs.
// pagoda maps a Hugging Face folder without copying, with NeoX pairing on the original rows; `convert` permutes.
#include "model/arch/arch_spec.h"

namespace pagoda {

extern const ArchSpec kLlamaArch = {
    .name = "llama",
    .hf_model_type = "llama",
    .rope = RopeType::kNormal,
    .hf_rope = RopeType::kNeox,
    .tensors =
        {
            {"token_embd.weight", "model.embed_tokens.weight"},
            {"output_norm.weight", "model.norm.weight"},
            {"output.weight", "lm_head.weight"},
            {"blk.{L}.attn_norm.weight", "model.layers.{L}.input_layernorm.weight"},
            {"blk.{L}.attn_q.weight", "model.layers.{L}.self_attn.q_proj.weight", HfTransform::kLlamaPermuteQ},
            {"blk.{L}.attn_k.weight", "model.layers.{L}.self_attn.k_proj.weight", HfTransform::kLlamaPermuteK},
            {"blk.{L}.attn_v.weight", "model.layers.{L}.self_attn.v_proj.weight"},
            {"blk.{L}.attn_output.weight", "model.layers.{L}.self_attn.o_proj.weight"},
            {"blk.{L}.ffn_norm.weight", "model.layers.{L}.post_attention_layernorm.weight"},
            {"blk.{L}.ffn_gate.weight", "model.layers.{L}.mlp.gate_proj.weight"},
            {"blk.{L}.ffn_up.weight", "model.layers.{L}.mlp.up_proj.weight"},
            {"blk.{L}.ffn_down.weight", "model.layers.{L}.mlp.down_proj.weight"},
        },
};

}  // namespace pagoda
