#include "model/transformer.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/activations.h"
#include "kernels/cpu/attention_probe.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "model/transformer_team.h"
#include "util/memory_budget.h"

namespace pagoda {

void TransformerWorkspace::reserve(const ModelHParams& hp, int64_t T) {
  auto grow = [](std::vector<float>& b, int64_t n) {
    if (static_cast<int64_t>(b.size()) < n) b.resize(n);
  };
  grow(x, T * hp.n_embd);
  grow(xn, T * hp.n_embd);
  grow(q, T * hp.q_dim());
  grow(k, T * hp.kv_dim());
  grow(v, T * hp.kv_dim());
  grow(attn, T * hp.q_dim());
  grow(proj, T * hp.n_embd);
  if (hp.parallel_residual) grow(attn_proj, T * hp.n_embd);
  grow(rope_cos, T * (hp.rope.n_rot / 2));
  grow(rope_sin, T * (hp.rope.n_rot / 2));
  grow(gate, T * hp.n_ff);
  grow(up, T * hp.n_ff);
}

Status transformer_forward_batch(const Model& model, const ForwardBatch& batch, const KvStorage& kv, TransformerWorkspace& ws,
                           ThreadPool& pool, std::vector<float>& logits, AttentionImpl impl,
                           ForwardSchedule schedule) {
  const ModelHParams& hp = model.hparams();
  const ModelWeights& w = model.weights();
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  if (T == 0) return make_error("forward called with no tokens");
  if (hp.head_dim > kMaxPagedHeadDim)
    return make_error("head dimension " + std::to_string(hp.head_dim) + " is larger than the attention kernel's " +
                      std::to_string(kMaxPagedHeadDim));
  if (batch.positions.size() != batch.tokens.size() || batch.slot_mapping.size() != batch.tokens.size())
    return make_error("forward batch: positions and slot_mapping must have one entry per token");
  const int32_t num_seqs = static_cast<int32_t>(batch.seq_lens_kv.size());
  if (batch.cu_seqlens_q.size() != static_cast<size_t>(num_seqs) + 1 || batch.cu_seqlens_q.back() != T ||
      batch.block_table.size() != static_cast<size_t>(num_seqs) * batch.max_blocks)
    return make_error("forward batch: inconsistent attention metadata");
  for (int64_t t = 0; t < T; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= hp.n_vocab)
      return make_error("token id " + std::to_string(batch.tokens[t]) + " is outside the vocabulary");
    if (batch.slot_mapping[t] < 0 || batch.slot_mapping[t] >= kv.num_slots || batch.positions[t] < 0)
      return make_error("forward batch: token " + std::to_string(t) + " has an invalid slot or position");
  }
  for (size_t i = 0; i < batch.logit_rows.size(); ++i) {
    if (batch.logit_rows[i] < 0 || batch.logit_rows[i] >= T) return make_error("forward batch: logit row out of range");
    if (i > 0 && batch.logit_rows[i] <= batch.logit_rows[i - 1])  // (at most T rows: the buffers hold T)
      return make_error("forward batch: logit rows must be strictly ascending");
  }
  const bool layer_mask = !batch.hidden_prefix.empty();
  if (layer_mask) {
    if (batch.hidden_prefix.size() != static_cast<size_t>(num_seqs) ||
        batch.hidden_prefix_layers.size() != static_cast<size_t>(num_seqs) * hp.n_layer)
      return make_error("forward batch: the layer mask needs one prefix per sequence and one flag per layer");
    for (int32_t s = 0; s < num_seqs; ++s) {
      const int32_t first_query = batch.seq_lens_kv[s] - (batch.cu_seqlens_q[s + 1] - batch.cu_seqlens_q[s]);
      if (batch.hidden_prefix[s] < 0 || batch.hidden_prefix[s] > first_query)
        return make_error("forward batch: sequence " + std::to_string(s) + " hides " +
                          std::to_string(batch.hidden_prefix[s]) + " keys, more than precede its first query (" +
                          std::to_string(first_query) + ")");
    }
  }
  PAGODA_RETURN_IF_ERROR(check_kv_head_dim(kv.dtype, hp.head_dim));
  if (batch.probe_mass != nullptr && batch.probe_prefix.size() != static_cast<size_t>(num_seqs))
    return make_error("forward batch: the attention probe needs one prefix length per sequence");
  {
    // The scratch buffers grow with the batch: refuse sizes the machine cannot hold rather than abort.
    const uint64_t per_token = 4 * hp.n_embd + 2 * hp.q_dim() + 2 * hp.kv_dim() + 2 * hp.n_ff + hp.rope.n_rot;
    auto bytes = checked_allocation_bytes({static_cast<uint64_t>(T), per_token, sizeof(float)},
                                          "the workspace for " + std::to_string(T) + " tokens");
    if (!bytes.ok()) return bytes.error();
  }
  ws.reserve(hp, T);
  if (layer_mask) ws.kv_begin.resize(num_seqs);
  const int64_t E = hp.n_embd, QD = hp.q_dim(), KVD = hp.kv_dim();

  PagedAttentionArgs args;
  args.q = ws.q.data();
  args.out = ws.attn.data();
  args.cu_seqlens_q = batch.cu_seqlens_q.data();
  args.seq_lens_kv = batch.seq_lens_kv.data();
  args.block_table = batch.block_table.data();
  args.num_seqs = num_seqs;
  args.max_blocks = batch.max_blocks;
  args.block_size = kv.block_size;
  args.n_heads = static_cast<int32_t>(hp.n_head);
  args.n_kv_heads = static_cast<int32_t>(hp.n_head_kv);
  args.head_dim = static_cast<int32_t>(hp.head_dim);
  args.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  args.kv_dtype = kv.dtype;
  const int64_t slot_bytes = kv_bytes(kv.dtype, hp.kv_dim());

  const ArchSpec& spec = *hp.spec;
  const bool learned_positions = spec.positions == PositionKind::kLearned;
  if (learned_positions)
    for (int64_t t = 0; t < T; ++t)
      if (batch.positions[t] >= w.position_embd.rows)
        return make_error("position " + std::to_string(batch.positions[t]) + " is beyond the model's " +
                          std::to_string(w.position_embd.rows) + " learned positions");
  // The row-wise steps between the matmuls (norms, rotary positions, SwiGLU) split their rows over the pool: each
  // row is computed as alone, so the split changes no bit; a single row (decode) runs on this thread.
  // The norm of a sub-layer: RMSNorm (weight) or LayerNorm (weight, bias), per the family.
  auto norm = [&](const float* x, const std::vector<float>& weight, const std::vector<float>& bias, int64_t rows,
                  float* out) {
    pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      if (spec.norm == NormKind::kLayer)
        layer_norm(x + r0 * E, weight.data(), bias.data(), r1 - r0, E, hp.norm_eps, out + r0 * E);
      else
        rms_norm(x + r0 * E, weight.data(), r1 - r0, E, hp.norm_eps, out + r0 * E);
    });
  };
  // RMSNorm of each head's vector ([rows, head_dim], in place): Qwen3's q_norm / k_norm.
  auto head_norm = [&](float* x, const std::vector<float>& weight, int64_t rows) {
    pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      rms_norm(x + r0 * hp.head_dim, weight.data(), r1 - r0, hp.head_dim, hp.norm_eps, x + r0 * hp.head_dim);
    });
  };
  auto bias = [&](float* y, const std::vector<float>& b, int64_t width) {
    if (!b.empty()) add_bias(y, b.data(), T, width);
  };

  // Token embedding (+ learned absolute positions).
  for (int64_t t = 0; t < T; ++t) dequantize_row(w.token_embd, batch.tokens[t], ws.x.data() + t * E);
  if (learned_positions) {
    for (int64_t t = 0; t < T; ++t) {
      dequantize_row(w.position_embd, batch.positions[t], ws.proj.data());
      add_in_place(ws.x.data() + t * E, ws.proj.data(), E);
    }
  }

  // Each token's rotary angles, once for all layers (rope_apply's own values: the bits of computing them per layer).
  const int64_t rope_half = hp.rope.n_rot / 2;
  if (!learned_positions)
    pool.parallel_for(T, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        rope_angles(hp.rope, batch.positions[t], ws.rope_cos.data() + t * rope_half,
                    ws.rope_sin.data() + t * rope_half);
    });

  if (schedule == ForwardSchedule::kAuto && transformer_team_applies(model, batch, T, impl)) {
    logits.resize(static_cast<size_t>(batch.logit_rows.size() * hp.n_vocab));
    transformer_forward_team(model, batch, kv, ws, pool, args, logits);
    return Status::success();
  }

  // Writes this step's K/V to their slots, then attends through the block table (in-step keys included).
  // (Stored in the cache's type: the attention reads the stored values, this step's keys included.)
  auto attend_paged = [&](int64_t il) {
    uint8_t* k_layer = kv.k_base + il * kv.layer_stride;
    uint8_t* v_layer = kv.v_base + il * kv.layer_stride;
    kv_store_rows(kv.dtype, ws.k.data(), KVD, T, KVD, k_layer, slot_bytes, batch.slot_mapping.data());
    kv_store_rows(kv.dtype, ws.v.data(), KVD, T, KVD, v_layer, slot_bytes, batch.slot_mapping.data());
    args.k_cache = k_layer;
    args.v_cache = v_layer;
    args.kv_begin = nullptr;  // every sequence sees all its keys, unless the layer mask hides a prefix here
    if (layer_mask) {
      bool any = false;
      for (int32_t s = 0; s < num_seqs; ++s) {
        const bool hidden = batch.hidden_prefix_layers[static_cast<size_t>(s) * hp.n_layer + il] != 0;
        ws.kv_begin[s] = hidden ? batch.hidden_prefix[s] : 0;
        any = any || ws.kv_begin[s] != 0;
      }
      if (any) args.kv_begin = ws.kv_begin.data();
    }
    if (batch.probe_mass != nullptr)
      attention_prefix_mass(args, batch.probe_prefix.data(), batch.probe_mass + il * T * hp.n_head, pool);
    if (impl == AttentionImpl::kFused)
      paged_attention(args, pool);
    else
      paged_attention_reference(args, pool);
  };

  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const LayerWeights& l = w.layers[il];
    // Attention block: norm, projections, rotary positions.
    norm(ws.x.data(), l.attn_norm, l.attn_norm_b, T, ws.xn.data());
    {
      const WeightMatrix* qkv[3] = {&l.wq, &l.wk, &l.wv};
      float* out[3] = {ws.q.data(), ws.k.data(), ws.v.data()};
      matmul_many(qkv, out, 3, ws.xn.data(), T, pool);
    }
    bias(ws.q.data(), l.bq, QD);
    bias(ws.k.data(), l.bk, KVD);
    bias(ws.v.data(), l.bv, KVD);
    if (spec.qk_norm) {  // each head's vector is one RMSNorm row
      head_norm(ws.q.data(), l.q_norm, T * hp.n_head);
      head_norm(ws.k.data(), l.k_norm, T * hp.n_head_kv);
    }
    if (!learned_positions) {
      pool.parallel_for(T, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const float* cos = ws.rope_cos.data() + t * rope_half;
          const float* sin = ws.rope_sin.data() + t * rope_half;
          rope_apply_angles(hp.rope, cos, sin, hp.n_head, hp.head_dim, ws.q.data() + t * QD);
          rope_apply_angles(hp.rope, cos, sin, hp.n_head_kv, hp.head_dim, ws.k.data() + t * KVD);
        }
      });
    }
    // Attention: through the paged cache, or over what the override supplies (no K/V stored then).
    if (batch.query_capture != nullptr)
      std::memcpy(batch.query_capture + il * T * QD, ws.q.data(), sizeof(float) * T * QD);
    if (batch.attention_override != nullptr) {
      batch.attention_override->attend(il, ws.q.data(), ws.k.data(), ws.v.data(), T, ws.attn.data());
    } else {
      attend_paged(il);
    }
    float* attn_out = hp.parallel_residual ? ws.attn_proj.data() : ws.proj.data();
    matmul(l.wo, ws.attn.data(), T, attn_out, pool);
    bias(attn_out, l.bo, E);
    // Sequential: the MLP reads x + attention. Parallel: it reads the layer's input, and both are added after it.
    if (!hp.parallel_residual) add_in_place(ws.x.data(), attn_out, T * E);

    // Feed-forward block: norm, SwiGLU or GELU, down projection.
    norm(ws.x.data(), l.ffn_norm, l.ffn_norm_b, T, ws.xn.data());
    float* hidden = ws.up.data();
    if (spec.mlp == MlpKind::kSwiGlu) {
      const WeightMatrix* gate_up[2] = {&l.w_gate, &l.w_up};
      float* out[2] = {ws.gate.data(), ws.up.data()};
      matmul_many(gate_up, out, 2, ws.xn.data(), T, pool);
      pool.parallel_for(T, [&](int64_t t0, int64_t t1) {
        silu_mul(ws.gate.data() + t0 * hp.n_ff, ws.up.data() + t0 * hp.n_ff, (t1 - t0) * hp.n_ff);
      });
      hidden = ws.gate.data();
    } else {
      matmul(l.w_up, ws.xn.data(), T, ws.up.data(), pool);
      bias(ws.up.data(), l.b_up, hp.n_ff);
      pool.parallel_for(T, [&](int64_t t0, int64_t t1) {
        gelu(hp.gelu, ws.up.data() + t0 * hp.n_ff, (t1 - t0) * hp.n_ff);
      });
    }
    matmul(l.w_down, hidden, T, ws.proj.data(), pool);
    bias(ws.proj.data(), l.b_down, E);
    if (hp.parallel_residual) {
      // (mlp + x) + attn, the order llama.cpp adds them in.
      for (int64_t i = 0; i < T * E; ++i) ws.x[i] = (ws.proj[i] + ws.x[i]) + ws.attn_proj[i];
    } else {
      add_in_place(ws.x.data(), ws.proj.data(), T * E);
    }
  }

  // Output norm and head, for the rows that need logits (gathered into proj first).
  const int64_t n_rows = static_cast<int64_t>(batch.logit_rows.size());
  logits.resize(static_cast<size_t>(n_rows * hp.n_vocab));
  if (n_rows == 0) return Status::success();
  for (int64_t r = 0; r < n_rows; ++r)
    std::memcpy(ws.proj.data() + r * E, ws.x.data() + batch.logit_rows[r] * E, sizeof(float) * E);
  norm(ws.proj.data(), w.output_norm, w.output_norm_b, n_rows, ws.xn.data());
  matmul(w.output, ws.xn.data(), n_rows, logits.data(), pool);
  return Status::success();
}

Status transformer_forward(const Model& model, std::span<const int32_t> tokens, ContiguousKvCache& kv, TransformerWorkspace& ws,
                     ThreadPool& pool, bool all_logits, std::vector<float>& logits) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t pos0 = kv.length();
  if (T == 0) return make_error("forward called with no tokens");
  if (pos0 + T > kv.capacity())
    return make_error("context full: " + std::to_string(pos0 + T) + " tokens exceed the context size of " +
                      std::to_string(kv.capacity()));
  // The contiguous cache is one block of `capacity` slots; slot = position.
  const int32_t block0 = 0;
  const ForwardBatch batch = ws.single.make(tokens, pos0, all_logits, std::span<const int32_t>(&block0, 1));
  KvStorage storage;
  storage.k_base = kv.k(0);
  storage.v_base = kv.v(0);
  storage.dtype = kv.dtype();
  storage.layer_stride = kv.capacity() * kv.slot_bytes();
  storage.num_slots = kv.capacity();
  storage.block_size = static_cast<int32_t>(kv.capacity());
  PAGODA_RETURN_IF_ERROR(transformer_forward_batch(model, batch, storage, ws, pool, logits));
  kv.set_length(pos0 + T);
  return Status::success();
}

}  // namespace pagoda
