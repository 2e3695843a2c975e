// Hyperparameters of a Llama-family model, read from GGUF metadata and validated.
#pragma once

#include <cstdint>
#include <string>

#include "io/gguf_file.h"
#include "kernels/cpu/rope.h"
#include "util/result.h"

namespace pagoda {

struct ModelHParams {
  std::string arch;         // general.architecture
  std::string name;         // general.name (may be empty)
  int64_t n_vocab = 0;      // rows of token_embd
  int64_t n_ctx_train = 0;  // {arch}.context_length
  int64_t n_embd = 0;       // model width
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;  // < n_head: grouped-query attention
  int64_t head_dim = 0;   // {arch}.attention.key_length, default n_embd / n_head
  int64_t n_ff = 0;       // FFN hidden width
  float rms_eps = 1e-5f;
  RopeParams rope;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

// Architectures whose forward pass pagoda implements.
bool is_supported_architecture(const std::string& arch);

Result<ModelHParams> read_hparams(const GgufFile& file);

}  // namespace pagoda
