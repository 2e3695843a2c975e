// One step's worth of tokens for the forward pass: any number of sequences, each contributing a run of
// consecutive positions (a prefill chunk or one decode token), with the paged-attention metadata of
// docs/seeds/paged-attention-kernel-lesson.md. The single-sequence path is the special case of one sequence
// whose "pool" is its contiguous cache seen as a single block.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_dtype.h"

namespace pagoda {

// Where K/V live: per layer [num_slots, n_kv_heads, head_dim] f32, slot = block * block_size + offset.
struct KvStorage {
  uint8_t* k_base = nullptr;  // layer l at k_base + l * layer_stride: [num_slots, n_kv_heads, head_dim] of dtype
  uint8_t* v_base = nullptr;
  KvDtype dtype = KvDtype::kF32;
  int64_t layer_stride = 0;  // bytes per layer
  int64_t num_slots = 0;     // slots per layer
  int32_t block_size = 0;
};

class AttentionOverride;  // below

struct ForwardBatch {
  std::span<const int32_t> tokens;        // [num_tokens] token ids, sequence after sequence
  std::span<const int32_t> positions;     // [num_tokens] position of each token in its sequence
  std::span<const int64_t> slot_mapping;  // [num_tokens] KV slot each token's K/V is written to
  std::span<const int32_t> cu_seqlens_q;  // [num_seqs + 1] prefix sums of the tokens per sequence
  std::span<const int32_t> seq_lens_kv;   // [num_seqs] K/V length of each sequence after this step
  std::span<const int32_t> block_table;   // [num_seqs, max_blocks] physical block ids, right-padded
  int32_t max_blocks = 0;
  std::span<const int32_t> logit_rows;  // token rows whose logits are wanted, ascending

  // Per-anchor layer mask (off when empty): in layer l, sequence s attends from its key hidden_prefix[s] on where
  // hidden_prefix_layers[s * n_layer + l] != 0 (its anchor is not visible to that layer), from key 0 elsewhere.
  // hidden_prefix[s] <= the position of the sequence's first query token in this step.
  std::span<const int32_t> hidden_prefix;         // [num_seqs]
  std::span<const uint8_t> hidden_prefix_layers;  // [num_seqs, n_layer]
  // The instrumented attention path (off when probe_mass is null): per layer, each query's attention mass on the
  // first probe_prefix[s] keys of its sequence (kernels/cpu/attention_probe.h). Never changes tokens or logits.
  std::span<const int32_t> probe_prefix;  // [num_seqs]
  float* probe_mass = nullptr;            // [n_layer, num_tokens, n_heads]
  // Query capture (off when null): every layer's queries after RoPE, for warm start's summaries.
  float* query_capture = nullptr;  // [n_layer, num_tokens, q_dim]
  // Attention override (off when null): no K/V is written to `kv`, and this replaces the paged attention.
  AttentionOverride* attention_override = nullptr;
};

// Replaces a layer's K/V store and paged attention (warm start's slot forward, src/warmstart/slot_forward.h): the
// model's projections, norms and MLP run unchanged, only what the tokens attend to differs.
class AttentionOverride {
 public:
  virtual ~AttentionOverride() = default;
  // q: [num_tokens, q_dim], k and v: [num_tokens, kv_dim] this step's rows after RoPE; out: [num_tokens, q_dim].
  virtual void attend(int64_t layer, const float* q, const float* k, const float* v, int64_t num_tokens,
                      float* out) = 0;
};

// The metadata of one sequence's step over a cache whose slot is the position (the single-sequence paths: the
// contiguous CPU cache, the device runner's pool): tokens at positions pos0 .. pos0 + T - 1, the block table `table`,
// and the logits of every token or of the last. The returned batch points into this object and `table`.
struct SingleSequenceBatch {
  std::vector<int32_t> positions;  // [T]
  std::vector<int64_t> slots;      // [T] = positions
  std::vector<int32_t> logit_rows;
  int32_t cu[2] = {0, 0};
  int32_t kv_len = 0;

  ForwardBatch make(std::span<const int32_t> tokens, int64_t pos0, bool all_logits, std::span<const int32_t> table) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    positions.resize(T);
    slots.resize(T);
    for (int64_t t = 0; t < T; ++t) slots[t] = positions[t] = static_cast<int32_t>(pos0 + t);
    logit_rows.clear();
    for (int64_t t = all_logits ? 0 : T - 1; t < T; ++t) logit_rows.push_back(static_cast<int32_t>(t));
    cu[1] = static_cast<int32_t>(T);
    kv_len = static_cast<int32_t>(pos0 + T);
    ForwardBatch b;
    b.tokens = tokens;
    b.positions = positions;
    b.slot_mapping = slots;
    b.cu_seqlens_q = cu;
    b.seq_lens_kv = std::span<const int32_t>(&kv_len, 1);
    b.block_table = table;
    b.max_blocks = static_cast<int32_t>(table.size());
    b.logit_rows = logit_rows;
    return b;
  }
};

// Which attention implementation the forward uses: the fused paged kernel (default), or the reference that
// gathers each sequence's K/V first (for benchmarks and cross-checks).
enum class AttentionImpl { kFused, kReference };

// How the forward spreads a step over the thread pool: kAuto runs small batches as one parallel region with barriers
// (model/transformer_team.h) and the rest as a region per matmul; kRegionPerStep always takes the latter (tests and
// benchmarks compare the two; the bits are the same).
enum class ForwardSchedule { kAuto, kRegionPerStep };

}  // namespace pagoda
