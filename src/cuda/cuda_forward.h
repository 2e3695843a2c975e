// The forward pass of Llama-family models on an NVIDIA GPU (issue #34, step 3): the same steps as
// model/transformer.cpp (embedding, per layer RMSNorm -> Q/K/V (+ biases, per-head Q/K norm) -> RoPE -> K/V stored
// in the paged pool -> paged attention -> output projection -> residual -> RMSNorm -> SwiGLU -> down projection ->
// residual; output norm and head), every step a kernel of src/cuda, weights and K/V in device memory.
//
// This header is plain C++17 (no CUDA type, none of pagoda's C++20 headers): model/device_forward.cpp, compiled with
// pagoda_core, describes the model and each batch with these structs, and only the .cu files see CUDA.
//
// Every kernel computes a token's row in a fixed order that depends on nothing else in the batch (the matmul's
// per-(token, row) sum, the norms' per-row sums, RoPE and the attention of paged_attention_cuda.h), so a sequence's
// logits are bitwise the same alone or batched with others (Gate 0 on the GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kv/kv_dtype.h"
#include "util/result.h"

namespace pagoda::cuda {

enum class CudaWeightType : uint8_t { kF32, kF16, kBF16 };

// A weight matrix as the model file holds it (host memory): rows x cols, row-major, row_bytes apart.
struct CudaMatrixDesc {
  const void* data = nullptr;
  CudaWeightType type = CudaWeightType::kF32;
  int64_t rows = 0, cols = 0;
  size_t row_bytes = 0;
};

// A vector of f32 values (host memory); empty when the model has none.
struct CudaVectorDesc {
  const float* data = nullptr;
  int64_t size = 0;
};

struct CudaLayerDesc {
  CudaVectorDesc attn_norm, ffn_norm;
  CudaMatrixDesc wq, wk, wv, wo, w_gate, w_up, w_down;
  CudaVectorDesc bq, bk, bv, bo;  // biases (Qwen2's QKV)
  CudaVectorDesc q_norm, k_norm;  // per-head RMSNorm of Q and K (Qwen3)
};

struct CudaModelDesc {
  int64_t n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
  float norm_eps = 1e-5f;
  bool rope_neox = false;  // pairs (i, i + n_rot/2) instead of (2i, 2i + 1)
  int64_t n_rot = 0;
  float rope_freq_base = 10000.0f, rope_freq_scale = 1.0f;
  CudaMatrixDesc token_embd, output;
  CudaVectorDesc output_norm;
  std::vector<CudaLayerDesc> layers;
};

// The K/V pool in device memory: per layer [num_slots, n_kv_heads, head_dim] of dtype, layer_stride bytes apart.
struct CudaKvView {
  uint8_t* k_base = nullptr;
  uint8_t* v_base = nullptr;
  KvDtype dtype = KvDtype::kF16;
  int64_t layer_stride = 0;
  int64_t num_slots = 0;
  int32_t block_size = 0;
};

// One step (host memory), with model/forward_batch.h's meaning.
struct CudaBatchDesc {
  const int32_t* tokens = nullptr;        // [num_tokens]
  const int32_t* positions = nullptr;     // [num_tokens]
  const int64_t* slot_mapping = nullptr;  // [num_tokens]
  const int32_t* cu_seqlens_q = nullptr;  // [num_seqs + 1]
  const int32_t* seq_lens_kv = nullptr;   // [num_seqs]
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks]
  const int32_t* logit_rows = nullptr;    // [num_logit_rows]
  int32_t num_tokens = 0, num_seqs = 0, max_blocks = 0, num_logit_rows = 0;
};

// K/V pool memory on the device (cudaMalloc'd, freed with the object).
class CudaKvMemory {
 public:
  static Result<std::unique_ptr<CudaKvMemory>> allocate(size_t k_bytes, size_t v_bytes);
  ~CudaKvMemory();
  uint8_t* k() const { return k_; }
  uint8_t* v() const { return v_; }
  // Copies `bytes` at each of `count` offsets (stride apart) from src_offset to dst_offset, in K and in V.
  Status copy(int64_t src_offset, int64_t dst_offset, int64_t bytes, int64_t count, int64_t stride);

 private:
  CudaKvMemory() = default;
  uint8_t* k_ = nullptr;
  uint8_t* v_ = nullptr;
};

class CudaForwardPass {
 public:
  // Copies the weights to the device. Errors name what the GPU path does not take.
  static Result<std::unique_ptr<CudaForwardPass>> create(const CudaModelDesc& model);
  ~CudaForwardPass();
  CudaForwardPass(const CudaForwardPass&) = delete;
  CudaForwardPass& operator=(const CudaForwardPass&) = delete;

  // Runs one step: stores every token's K/V in `kv`, attends through the block table, and returns the logits of
  // the batch's logit rows in `logits` ([num_logit_rows, n_vocab]).
  Status forward(const CudaBatchDesc& batch, const CudaKvView& kv, std::vector<float>& logits);

  size_t weight_bytes() const;  // device memory the weights take
  const char* device_name() const;

 private:
  struct Impl;
  explicit CudaForwardPass(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::cuda
