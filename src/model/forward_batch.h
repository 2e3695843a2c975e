// One step's worth of tokens for the forward pass: any number of sequences, each contributing a run of
// consecutive positions (a prefill chunk or one decode token), with the paged-attention metadata of
// docs/seeds/paged-attention-kernel-lesson.md. The single-sequence path is the special case of one sequence
// whose "pool" is its contiguous cache seen as a single block.
#pragma once

#include <cstdint>
#include <span>

namespace pagoda {

// Where K/V live: per layer [num_slots, n_kv_heads, head_dim] f32, slot = block * block_size + offset.
struct KvStorage {
  float* k_base = nullptr;  // layer l at k_base + l * layer_stride
  float* v_base = nullptr;
  int64_t layer_stride = 0;  // floats per layer
  int64_t num_slots = 0;     // slots per layer
  int32_t block_size = 0;
};

struct ForwardBatch {
  std::span<const int32_t> tokens;        // [num_tokens] token ids, sequence after sequence
  std::span<const int32_t> positions;     // [num_tokens] position of each token in its sequence
  std::span<const int64_t> slot_mapping;  // [num_tokens] KV slot each token's K/V is written to
  std::span<const int32_t> cu_seqlens_q;  // [num_seqs + 1] prefix sums of the tokens per sequence
  std::span<const int32_t> seq_lens_kv;   // [num_seqs] K/V length of each sequence after this step
  std::span<const int32_t> block_table;   // [num_seqs, max_blocks] physical block ids, right-padded
  int32_t max_blocks = 0;
  std::span<const int32_t> logit_rows;  // token rows whose logits are wanted, ascending
};

// Which attention implementation the forward uses: the fused paged kernel (default), or the reference that
// gathers each sequence's K/V first (for benchmarks and cross-checks).
enum class AttentionImpl { kFused, kReference };

}  // namespace pagoda
