// What distinguishes one decoder-only transformer family from another, as data: which norm, which biases, which
// position scheme, how the MLP and the residual are laid out, and how the tensors are named and stored. The
// forward pass (model/transformer.cpp) and the loaders read this description; none of them branches on a family's
// name. Adding a family is one file in this folder (its ArchSpec) plus a line in arch_registry.cpp and its tests:
// docs/architectures.md walks through it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/activations.h"
#include "kernels/cpu/rope.h"

namespace pagoda {

enum class NormKind {
  kRms,    // RMSNorm, weight only ({arch}.attention.layer_norm_rms_epsilon)
  kLayer,  // LayerNorm, weight and bias ({arch}.attention.layer_norm_epsilon)
};

enum class PositionKind {
  kRope,     // rotary positions on Q and K (rope type below; partial rotary through rope.dimension_count)
  kLearned,  // a learned position_embd table added to the token embedding
};

enum class MlpKind {
  kSwiGlu,  // down(silu(gate(x)) * up(x))
  kGelu,    // down(gelu(up(x)))
};

// How a Hugging Face tensor differs from the GGUF tensor it becomes (llama.cpp's convert_hf_to_gguf.py does the
// same rearrangements when it writes a GGUF).
enum class HfTransform {
  kNone,            // the same [out, in] rows
  kTranspose,       // GPT-2's Conv1D stores [in, out]
  kNeoxQkv,         // GPT-NeoX's fused QKV rows interleave per head [n_head, 3, head_dim]: regroup as [3, n_head, ..]
  kLlamaPermuteQ,   // Llama's Q rows: rotate_half halves -> interleaved pairs (only `pagoda convert` applies it)
  kLlamaPermuteK,   // the same for K (with the KV head count)
};

// One tensor of a layer (or of the model when the name has no "{L}").
struct TensorName {
  const char* gguf;  // GGUF name, "{L}" = layer index, e.g. "blk.{L}.attn_q.weight"
  const char* hf;    // Hugging Face name, e.g. "model.layers.{L}.self_attn.q_proj.weight"
  HfTransform transform = HfTransform::kNone;
};

// The config.json keys a family names its hyperparameters with (nullptr: the family has no such key).
struct HfConfigNames {
  const char* context_length = "max_position_embeddings";
  const char* hidden_size = "hidden_size";
  const char* num_layers = "num_hidden_layers";
  const char* intermediate_size = "intermediate_size";  // absent or null: 4 x hidden_size
  const char* num_heads = "num_attention_heads";
  const char* num_kv_heads = "num_key_value_heads";  // absent: num_heads
  const char* norm_eps = "rms_norm_eps";
  const char* rope_theta = "rope_theta";
  const char* activation = "hidden_act";
};

struct ArchSpec {
  const char* name;           // GGUF general.architecture
  const char* hf_model_type;  // config.json model_type
  NormKind norm = NormKind::kRms;
  PositionKind positions = PositionKind::kRope;
  RopeType rope = RopeType::kNormal;     // pairing in the GGUF layout
  RopeType hf_rope = RopeType::kNormal;  // pairing in the Hugging Face layout (Llama: kNeox on unpermuted Q/K rows)
  MlpKind mlp = MlpKind::kSwiGlu;
  GeluKind gelu = GeluKind::kTanh;  // kGelu only: the function the family was trained with (config hidden_act wins)
  bool fused_qkv = false;           // one attn_qkv tensor, rows [q_dim | kv_dim | kv_dim]
  bool fused_gate_up = false;       // ffn_up holds rows [gate (n_ff) | up (n_ff)], no ffn_gate
  bool qkv_bias = false;            // attn_q/k/v (or attn_qkv) biases
  bool out_bias = false;            // attn_output bias
  bool mlp_bias = false;            // ffn_up / ffn_down biases
  bool qk_norm = false;             // attn_q_norm / attn_k_norm: per-head RMSNorm of Q and K before RoPE
  bool parallel_residual = false;   // x + attn(norm1(x)) + mlp(norm2(x)); GGUF {arch}.use_parallel_residual overrides
  bool tied_output_default = false;  // no output.weight: the head is token_embd (GGUF); HF: tie_word_embeddings
  std::vector<TensorName> tensors;  // every tensor's GGUF and HF names (the HF loader and `convert` map through it)
  HfConfigNames hf_config = {};
};

// The families pagoda runs, by GGUF name; nullptr when unknown.
const ArchSpec* find_arch(std::string_view gguf_name);
// By config.json model_type; nullptr when unknown.
const ArchSpec* find_arch_by_hf_model_type(std::string_view model_type);
const std::vector<const ArchSpec*>& all_archs();
std::string supported_arch_names();  // "llama, qwen2, ..."

}  // namespace pagoda
