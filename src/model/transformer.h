// The forward pass of every supported family on CPU, driven by its ArchSpec (model/arch/arch_spec.h): embedding
// (+ learned positions), per layer norm -> Q/K/V (+ biases, per-head Q/K norm) -> RoPE -> grouped-query attention
// -> output projection -> residual -> norm -> SwiGLU or GELU MLP -> residual (sequential, or parallel: both
// sub-layers read the same input); then output norm and head.
#pragma once

#include <span>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace pagoda {

// Scratch buffers of one forward call, reused across calls (grown only when a larger batch arrives).
struct TransformerWorkspace {
  std::vector<float> x;             // [T, n_embd] residual stream
  std::vector<float> xn;            // [T, n_embd] normalised input of a sub-layer
  std::vector<float> q;             // [T, q_dim]
  std::vector<float> k;             // [T, kv_dim]
  std::vector<float> v;             // [T, kv_dim]
  std::vector<float> attn;          // [T, q_dim]
  std::vector<float> proj;          // [T, n_embd] output of attn_output / ffn_down
  std::vector<float> attn_proj;     // [T, n_embd] the attention sub-layer's output (parallel residual only)
  std::vector<float> gate;          // [T, n_ff]
  std::vector<float> up;            // [T, n_ff]
  std::vector<float> rope_cos;      // [T, n_rot / 2] each token's rotary angles, computed once for every layer
  std::vector<float> rope_sin;      // [T, n_rot / 2]
  SingleSequenceBatch single;       // the single-sequence wrapper's metadata
  std::vector<int32_t> kv_begin;    // [num_seqs] one layer's first attended key per sequence (layer mask)
  std::vector<float> attention_scratch;  // split-KV decode's saved states, shared by the threads of a region
  std::vector<uint8_t> team_xq[3];       // [T, row bytes] activations quantized by the threads of a region together
  std::vector<uint8_t> team_down_xq;     // [T, row bytes] the down projection's input, each thread its own columns
  void reserve(const ModelHParams& hp, int64_t num_tokens);
};

// Runs one batch: writes every token's K/V to its slot, attends through the block table, and returns the logits
// of batch.logit_rows in `logits` ([logit_rows.size(), n_vocab]). Each output row is bitwise independent of the
// rest of the batch: the matmuls, norms and attention reduce in a fixed order per token.
// Small batches (decode) run as one parallel region (model/transformer_team.h) unless `schedule` says otherwise;
// both schedules give the same bits.
Status transformer_forward_batch(const Model& model, const ForwardBatch& batch, const KvStorage& kv, TransformerWorkspace& ws,
                           ThreadPool& pool, std::vector<float>& logits, AttentionImpl impl = AttentionImpl::kFused,
                           ForwardSchedule schedule = ForwardSchedule::kAuto);

// The single-sequence path: runs `tokens` at positions kv.length() .. kv.length() + T - 1 and appends their K/V to kv.
// logits receives [T, n_vocab] when all_logits, else [1, n_vocab] for the last token.
Status transformer_forward(const Model& model, std::span<const int32_t> tokens, ContiguousKvCache& kv, TransformerWorkspace& ws,
                     ThreadPool& pool, bool all_logits, std::vector<float>& logits);

}  // namespace pagoda
