// Hyperparameters of a decoder-only transformer, read from GGUF metadata (a Hugging Face folder is first
// presented as GGUF metadata, see model/hf_folder.h) and validated.
#pragma once

#include <cstdint>
#include <string>

#include "io/gguf_file.h"
#include "kernels/cpu/rope.h"
#include "model/arch/arch_spec.h"
#include "util/result.h"

namespace pagoda {

struct ModelHParams {
  std::string arch;                // general.architecture
  const ArchSpec* spec = nullptr;  // the family's description (never null once read)
  std::string name;                // general.name (may be empty)
  int64_t n_vocab = 0;             // rows of token_embd
  int64_t n_ctx_train = 0;         // {arch}.context_length (capped at the sliding window when there is one)
  int64_t n_embd = 0;              // model width
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;  // < n_head: grouped-query attention
  int64_t head_dim = 0;   // {arch}.attention.key_length, default n_embd / n_head
  int64_t n_ff = 0;       // FFN hidden width
  float norm_eps = 1e-5f;           // RMSNorm or LayerNorm epsilon, as the family's norm
  bool parallel_residual = false;   // spec default, or {arch}.use_parallel_residual
  GeluKind gelu = GeluKind::kTanh;  // MlpKind::kGelu only
  int64_t sliding_window = 0;       // {arch}.attention.sliding_window as stored (0: none)
  RopeParams rope;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

// Architectures whose forward pass pagoda implements (model/arch/).
bool is_supported_architecture(const std::string& arch);

Result<ModelHParams> read_hparams(const GgufFile& file);

}  // namespace pagoda
