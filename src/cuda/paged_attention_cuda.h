// Attention over a paged KV cache on an NVIDIA GPU: the contract of kernels/cpu/paged_attention.h (the metadata,
// the K/V layout, causal prefill chunks, kv_begin), with every pointer in device memory.
//
// Reduction order (docs/kernels.md, "GPU paged attention"): a query's keys, counted from kv_begin, fall into
// segments of cuda_key_segment(head_dim) logical positions (never physical blocks). One thread block computes one segment for
// the query heads that share a KV head: the segment's scores, their max, e^(score - max) and its sum, and the
// weighted values, each in a fixed order that depends only on the position of a key inside its segment. A query
// with one segment writes values / sum directly; longer ones (split-KV: the segments run as separate thread blocks,
// so a long context fills the GPU) save each segment's (max, sum, values) and a second kernel rescales every
// segment to their common max and adds them in segment order. Nothing in that order depends on the block size, the physical blocks, the other sequences of the batch or
// the grid, so a query's output is bitwise the same in every batch (tests/cuda/paged_attention_cuda_test.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kv/kv_dtype.h"
#include "util/result.h"

namespace pagoda::cuda {

// Logical key positions per segment: one thread block's work, and the unit the split-KV fold combines. 512 for
// heads of up to 64 values (a block then reads as many bytes as one of 128-value heads), else 256. A function of the
// model alone, so the order of a query's arithmetic never depends on the batch.
constexpr int32_t cuda_key_segment(int32_t head_dim) { return head_dim <= 64 ? 512 : 256; }
// Query heads per KV head the kernel takes (grouped-query attention up to 8:1).
constexpr int32_t kCudaMaxGroup = 8;

struct CudaPagedAttentionArgs {
  const float* q = nullptr;               // [num_tokens, n_heads, head_dim], device
  const void* k_cache = nullptr;          // [num_blocks, block_size, n_kv_heads, head_dim] of kv_dtype, device
  const void* v_cache = nullptr;          // [num_blocks, block_size, n_kv_heads, head_dim] of kv_dtype, device
  const int32_t* cu_seqlens_q = nullptr;  // [num_seqs + 1], device
  const int32_t* seq_lens_kv = nullptr;   // [num_seqs], device: keys per sequence, this step's included
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks], device
  const int32_t* kv_begin = nullptr;      // [num_seqs], device; nullptr: 0 for every sequence
  float* out = nullptr;                   // [num_tokens, n_heads, head_dim], device
  int32_t num_seqs = 0;
  int32_t num_tokens = 0;  // cu_seqlens_q[num_seqs]
  int32_t max_blocks = 0;  // row stride of block_table
  int32_t block_size = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;    // 8, 16, 32, 64, 128 or 256
  int32_t max_kv_len = 0;  // >= every seq_lens_kv[s] - kv_begin[s]: sizes the grid (segments per query)
  float scale = 1.0f;
  KvDtype kv_dtype = KvDtype::kF16;  // f32, f16 or bf16
};

// Bytes of device scratch the split-KV states of a call need (0 when no query can have two segments).
size_t paged_attention_cuda_workspace_bytes(const CudaPagedAttentionArgs& a);

// Checks the arguments (an error names the one that is off: head size, group, KV type, workspace) and enqueues the
// kernels on `stream` (a cudaStream_t; nullptr: the default stream). A launch failure is an error naming CUDA's.
Status paged_attention_cuda(const CudaPagedAttentionArgs& a, void* workspace, size_t workspace_bytes,
                            void* stream = nullptr);

}  // namespace pagoda::cuda
