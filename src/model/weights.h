// The weights of a Llama-family model as views into the mapped GGUF file. Matrices stay in their file type;
// only the small norm vectors are converted to f32 copies.
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
  std::vector<float> attn_norm;  // [n_embd]
  WeightMatrix wq;               // [q_dim rows, n_embd cols]
  WeightMatrix wk;               // [kv_dim, n_embd]
  WeightMatrix wv;               // [kv_dim, n_embd]
  WeightMatrix wo;               // [n_embd, q_dim]
  std::vector<float> ffn_norm;   // [n_embd]
  WeightMatrix w_gate;           // [n_ff, n_embd]
  WeightMatrix w_up;             // [n_ff, n_embd]
  WeightMatrix w_down;           // [n_embd, n_ff]
};

struct ModelWeights {
  WeightMatrix token_embd;         // [n_vocab, n_embd]
  std::vector<float> output_norm;  // [n_embd]
  WeightMatrix output;             // [n_vocab, n_embd]; token_embd when the head is tied
  bool tied_output = false;
  std::vector<LayerWeights> layers;
  // The packed copies of the matmul weights of types that pack (Q8_0, Q4_0, IQ4_NL; WeightMatrix::packed points in).
  std::shared_ptr<PackedWeights> packed;
};

// Finds every tensor the architecture needs and checks its type and shape against the hyperparameters, then packs
// the matmul weights of the types that pack (quant_dot_packed.h) and releases the file pages they were copied from.
Result<ModelWeights> load_weights(const GgufFile& file, const ModelHParams& hp);

}  // namespace pagoda
