#include "model/arch/llama.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/activations.h"
#include "kernels/cpu/attention_ref.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "util/memory_budget.h"

namespace pagoda {

void LlamaWorkspace::reserve(const ModelHParams& hp, int64_t T) {
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
  grow(gate, T * hp.n_ff);
  grow(up, T * hp.n_ff);
}

Status llama_forward(const Model& model, std::span<const int32_t> tokens, ContiguousKvCache& kv, LlamaWorkspace& ws,
                     ThreadPool& pool, bool all_logits, std::vector<float>& logits) {
  const ModelHParams& hp = model.hparams();
  const ModelWeights& w = model.weights();
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t pos0 = kv.length();
  if (T == 0) return make_error("forward called with no tokens");
  if (pos0 + T > kv.capacity())
    return make_error("context full: " + std::to_string(pos0 + T) + " tokens exceed the context size of " +
                      std::to_string(kv.capacity()));
  for (int32_t id : tokens)
    if (id < 0 || id >= hp.n_vocab) return make_error("token id " + std::to_string(id) + " is outside the vocabulary");
  {
    // The scratch buffers grow with the batch: refuse sizes the machine cannot hold rather than abort.
    const uint64_t per_token = 3 * hp.n_embd + 2 * hp.q_dim() + 2 * hp.kv_dim() + 2 * hp.n_ff;
    auto bytes = checked_allocation_bytes({static_cast<uint64_t>(T), per_token, sizeof(float)},
                                          "the workspace for " + std::to_string(T) + " tokens");
    if (!bytes.ok()) return bytes.error();
  }
  ws.reserve(hp, T);
  const int64_t E = hp.n_embd, QD = hp.q_dim(), KVD = hp.kv_dim();

  // Token embedding.
  for (int64_t t = 0; t < T; ++t) dequantize_row(w.token_embd, tokens[t], ws.x.data() + t * E);

  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const LayerWeights& l = w.layers[il];
    // Attention block: norm, projections, rotary positions.
    rms_norm(ws.x.data(), l.attn_norm.data(), T, E, hp.rms_eps, ws.xn.data());
    matmul(l.wq, ws.xn.data(), T, ws.q.data(), pool);
    matmul(l.wk, ws.xn.data(), T, ws.k.data(), pool);
    matmul(l.wv, ws.xn.data(), T, ws.v.data(), pool);
    for (int64_t t = 0; t < T; ++t) {
      rope_apply(hp.rope, pos0 + t, hp.n_head, hp.head_dim, ws.q.data() + t * QD);
      rope_apply(hp.rope, pos0 + t, hp.n_head_kv, hp.head_dim, ws.k.data() + t * KVD);
    }
    // Append this step's K/V, then attend over the whole cached history.
    std::memcpy(kv.k(il) + pos0 * KVD, ws.k.data(), sizeof(float) * T * KVD);
    std::memcpy(kv.v(il) + pos0 * KVD, ws.v.data(), sizeof(float) * T * KVD);
    ContiguousAttentionArgs args;
    args.q = ws.q.data();
    args.k_cache = kv.k(il);
    args.v_cache = kv.v(il);
    args.out = ws.attn.data();
    args.num_tokens = T;
    args.first_pos = pos0;
    args.n_heads = hp.n_head;
    args.n_kv_heads = hp.n_head_kv;
    args.head_dim = hp.head_dim;
    args.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    attention_contiguous(args, pool);
    matmul(l.wo, ws.attn.data(), T, ws.proj.data(), pool);
    add_in_place(ws.x.data(), ws.proj.data(), T * E);

    // Feed-forward block: norm, SwiGLU, down projection.
    rms_norm(ws.x.data(), l.ffn_norm.data(), T, E, hp.rms_eps, ws.xn.data());
    matmul(l.w_gate, ws.xn.data(), T, ws.gate.data(), pool);
    matmul(l.w_up, ws.xn.data(), T, ws.up.data(), pool);
    silu_mul(ws.gate.data(), ws.up.data(), T * hp.n_ff);
    matmul(l.w_down, ws.gate.data(), T, ws.proj.data(), pool);
    add_in_place(ws.x.data(), ws.proj.data(), T * E);
  }
  kv.set_length(pos0 + T);

  // Output norm and head, for the rows that need logits.
  const int64_t first_row = all_logits ? 0 : T - 1;
  const int64_t n_rows = T - first_row;
  rms_norm(ws.x.data() + first_row * E, w.output_norm.data(), n_rows, E, hp.rms_eps, ws.xn.data());
  logits.resize(static_cast<size_t>(n_rows * hp.n_vocab));
  matmul(w.output, ws.xn.data(), n_rows, logits.data(), pool);
  return Status::success();
}

}  // namespace pagoda
