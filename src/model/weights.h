// The weights of a decoder-only transformer as views into the mapped file. Matrices stay in their file type; only
// the small vectors (norms, biases) are converted to f32 copies. Which tensors exist is the family's ArchSpec.
#pragma once

#include <memory>
#include <vector>

#include "io/gguf_file.h"
#include "kernels/cpu/quant_dot_packed.h"
#include "kernels/cpu/weight_matrix.h"
#include "model/hparams.h"
#include "util/result.h"

namespace pagoda {

struct LayerWeights {
  std::vector<float> attn_norm;    // [n_embd]
  std::vector<float> attn_norm_b;  // [n_embd] LayerNorm only
  WeightMatrix wq;                 // [q_dim rows, n_embd cols] (rows of attn_qkv when fused)
  WeightMatrix wk;                 // [kv_dim, n_embd]
  WeightMatrix wv;                 // [kv_dim, n_embd]
  std::vector<float> bq, bk, bv;   // [q_dim], [kv_dim], [kv_dim] when the family has QKV biases
  std::vector<float> q_norm;       // [head_dim] per-head RMSNorm weights (qk_norm)
  std::vector<float> k_norm;       // [head_dim]
  WeightMatrix wo;                 // [n_embd, q_dim]
  std::vector<float> bo;           // [n_embd] out_bias
  std::vector<float> ffn_norm;     // [n_embd]
  std::vector<float> ffn_norm_b;   // [n_embd] LayerNorm only
  WeightMatrix w_gate;             // [n_ff, n_embd] SwiGLU only (rows of ffn_up when fused)
  WeightMatrix w_up;               // [n_ff, n_embd]
  WeightMatrix w_down;             // [n_embd, n_ff]
  std::vector<float> b_up;         // [n_ff] mlp_bias
  std::vector<float> b_down;       // [n_embd] mlp_bias
};

struct ModelWeights {
  WeightMatrix token_embd;           // [n_vocab, n_embd]
  WeightMatrix position_embd;        // [n_ctx_train, n_embd] learned positions only
  std::vector<float> output_norm;    // [n_embd]
  std::vector<float> output_norm_b;  // [n_embd] LayerNorm only
  WeightMatrix output;               // [n_vocab, n_embd]; token_embd when the head is tied
  bool tied_output = false;
  std::vector<LayerWeights> layers;
  // The packed copies of the matmul weights of types that pack (Q8_0, Q4_0, IQ4_NL; WeightMatrix::packed points in).
  std::shared_ptr<PackedWeights> packed;
};

// Finds every tensor the architecture needs and checks its type and shape against the hyperparameters, then packs
// the matmul weights of the types that pack (quant_dot_packed.h) and releases the file pages they were copied from.
Result<ModelWeights> load_weights(const GgufFile& file, const ModelHParams& hp);

}  // namespace pagoda
