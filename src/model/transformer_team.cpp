#include "model/transformer_team.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <span>

#include "kernels/cpu/activations.h"
#include "kernels/cpu/kv_store.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"

namespace pagoda {
namespace {

struct Range {
  int64_t begin, end;
};
// Share tid of nt of [0, units), in order: [units * tid / nt, units * (tid + 1) / nt).
Range share(int64_t units, int tid, int nt) { return {units * tid / nt, units * (tid + 1) / nt}; }

// This thread's share of `rows` rows, in whole granules (the last share ends at `rows`).
Range row_share(int64_t rows, int64_t granule, int tid, int nt) {
  const Range g = share((rows + granule - 1) / granule, tid, nt);
  return {std::min(rows, g.begin * granule), std::min(rows, g.end * granule)};
}

// y[t, r] += b[r] for rows [r.begin, r.end) of every token (y: [num_tokens, width]); nothing when b is empty.
void add_bias_rows(float* y, const std::vector<float>& b, int64_t num_tokens, int64_t width, Range r) {
  if (b.empty()) return;
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t i = r.begin; i < r.end; ++i) y[t * width + i] += b[i];
}

// What a thread asks the memory system for while it waits at a barrier: the first bytes of its next matmul's weight
// rows, into L2, a few lines per spin, so the wait is not lost to the weight stream. (Decode waits at its barriers
// while the other thread finishes its share of a step; the weights it then streams do not depend on that.)
class WarmWeights {
 public:
  static constexpr size_t kBytes = 256 * 1024;  // at most this much a phase (L2: 512 KiB on Zen 3, 1 MiB on Zen 4 / 5)
  void set(std::initializer_list<std::span<const uint8_t>> spans) {
    n_ = 0;
    for (std::span<const uint8_t> s : spans)
      if (!s.empty() && n_ < 3) spans_[n_++] = s;
    at_ = 0;
    offset_ = 0;
    budget_ = kBytes;
  }
  // ThreadPool::barrier's idle step: asks for the next few lines; false once there is nothing left to ask for.
  static bool step(void* self) { return static_cast<WarmWeights*>(self)->step(); }

 private:
  static constexpr int kLinesPerStep = 4;
  bool step() {
    for (int i = 0; i < kLinesPerStep; ++i) {
      while (at_ < n_ && offset_ >= spans_[at_].size()) ++at_, offset_ = 0;
      if (at_ == n_ || budget_ == 0) return false;
      __builtin_prefetch(spans_[at_].data() + offset_, 0, 2);
      offset_ += 64;
      budget_ = budget_ > 64 ? budget_ - 64 : 0;
    }
    return true;
  }
  std::span<const uint8_t> spans_[3];
  int n_ = 0, at_ = 0;
  size_t offset_ = 0, budget_ = 0;
};

}  // namespace

bool transformer_team_applies(const Model& model, const ForwardBatch& batch, int64_t num_tokens, AttentionImpl impl) {
  if (impl != AttentionImpl::kFused || !matmul_splits_rows_statically(num_tokens)) return false;
  if (batch.probe_mass != nullptr || batch.attention_override != nullptr || batch.query_capture != nullptr ||
      !batch.hidden_prefix.empty())
    return false;
  const ModelHParams& hp = model.hparams();
  for (const LayerWeights& l : model.weights().layers)
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv})
      if (hp.head_dim % matmul_row_granule(*w) != 0) return false;
  return true;
}

void transformer_forward_team(const Model& model, const ForwardBatch& batch, const KvStorage& kv,
                              TransformerWorkspace& ws, ThreadPool& pool, const PagedAttentionArgs& args,
                              std::vector<float>& logits) {
  const ModelHParams& hp = model.hparams();
  const ModelWeights& w = model.weights();
  const ArchSpec& spec = *hp.spec;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t E = hp.n_embd, QD = hp.q_dim(), KVD = hp.kv_dim(), HD = hp.head_dim, FF = hp.n_ff;
  const int64_t n_head = hp.n_head, n_kv = hp.n_head_kv;
  const int64_t rope_half = hp.rope.n_rot / 2;
  const bool rotary = spec.positions != PositionKind::kLearned;
  const int64_t slot_bytes = kv_bytes(kv.dtype, KVD), head_bytes = kv_bytes(kv.dtype, HD);
  const int64_t n_rows = static_cast<int64_t>(batch.logit_rows.size());
  const int nt = pool.num_threads();
  std::vector<float>& attention_scratch = ws.attention_scratch;

  // From two tokens a thread, the norms and the activations' quantization split by tokens into shared buffers (then a
  // barrier); below that each thread computes them for every token itself (no barrier, a little more work).
  auto split_rows = [&](int64_t rows) { return rows >= 2 * nt; };
  if (split_rows(T)) {
    size_t row_bytes = matmul_input_row_bytes(w.output);
    for (const LayerWeights& l : w.layers)
      for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
        if (m->rows > 0) row_bytes = std::max(row_bytes, matmul_input_row_bytes(*m));
    for (std::vector<uint8_t>& b : ws.team_xq) b.resize(static_cast<size_t>(T) * row_bytes);
  }

  // The down projection's input is prepared by the threads that computed it, each its own feed-forward rows (hot in
  // its cache; half the work, and a quarter of the bytes cross to the other thread), where its prepared row is
  // plain blocks and every thread's rows start on a block.
  auto ff_granule = [&](const LayerWeights& l) {  // feed-forward rows are shared out in whole granules of these
    return spec.mlp == MlpKind::kSwiGlu ? std::lcm(matmul_row_granule(l.w_gate), matmul_row_granule(l.w_up))
                                        : matmul_row_granule(l.w_up);
  };
  auto down_by_cols = [&](const LayerWeights& l) {
    const int64_t block_cols = matmul_input_block_cols(l.w_down);
    if (block_cols == 0) return false;
    for (int t = 0; t < nt; ++t)
      if (row_share(FF, ff_granule(l), t, nt).begin % block_cols != 0) return false;
    return true;
  };
  {
    size_t down_bytes = 0;
    for (const LayerWeights& l : w.layers)
      if (down_by_cols(l)) down_bytes = std::max(down_bytes, matmul_input_row_bytes(l.w_down));
    ws.team_down_xq.resize(static_cast<size_t>(T) * down_bytes);
  }

  pool.run([&](int tid) {
    thread_local std::vector<float> own_xn;  // [T, E] this thread's normalised input of a sub-layer (few tokens)
    thread_local std::vector<uint8_t> own_xq[3];
    MatmulInput in[3];
    WarmWeights warm;
    auto barrier = [&] { pool.barrier(tid, WarmWeights::step, &warm); };
    // The inputs of a phase's matmuls w[0 .. n) from x ([rows, *]), normalised first when norm_w is given; inputs of
    // one format are prepared once.
    auto prepare = [&](const WeightMatrix* const* m, int n, const float* x, int64_t rows,
                       const std::vector<float>* norm_w, const std::vector<float>* norm_b) {
      const bool split = split_rows(rows);
      const Range mine = split ? share(rows, tid, nt) : Range{0, rows};
      bool wait = false;
      if (norm_w != nullptr) {
        if (!split) own_xn.resize(static_cast<size_t>(rows * E));
        float* out = split ? ws.xn.data() : own_xn.data();
        const int64_t r0 = mine.begin, count = mine.end - mine.begin;
        if (spec.norm == NormKind::kLayer)
          layer_norm(x + r0 * E, norm_w->data(), norm_b->data(), count, E, hp.norm_eps, out + r0 * E);
        else
          rms_norm(x + r0 * E, norm_w->data(), count, E, hp.norm_eps, out + r0 * E);
        x = out;
        wait = split;
      }
      for (int i = 0; i < n; ++i) {
        int same = -1;
        for (int j = 0; j < i && same < 0; ++j)
          if (matmul_shares_input(*m[j], *m[i])) same = j;
        if (same >= 0) {
          in[i] = in[same];
          continue;
        }
        in[i] = MatmulInput{x, nullptr, matmul_input_row_bytes(*m[i]), rows};
        if (in[i].x_bytes == 0) continue;  // float weights read x
        if (!split) own_xq[i].resize(rows * in[i].x_bytes);
        uint8_t* xq = split ? ws.team_xq[i].data() : own_xq[i].data();
        matmul_prepare_rows(*m[i], x, mine.begin, mine.end, xq);
        in[i].xq = xq;
        wait = wait || split;
      }
      if (wait) barrier();
    };
    // Heads [0, n_head) are Q's, then K's, then V's: this thread's share of them, whole. Where they do not divide
    // evenly the first threads take the extra heads: the last ones rotate and store the K/V.
    const int64_t units = n_head + 2 * n_kv;
    const Range heads{(units * tid + nt - 1) / nt, (units * (tid + 1) + nt - 1) / nt};
    auto heads_of = [&](int64_t first, int64_t count) {  // this thread's heads of one matrix, counted from its first
      return Range{std::clamp(heads.begin - first, int64_t{0}, count),
                   std::clamp(heads.end - first, int64_t{0}, count)};
    };
    const Range qh = heads_of(0, n_head), kh = heads_of(n_head, n_kv), vh = heads_of(n_head + n_kv, n_kv);

    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const LayerWeights& l = w.layers[il];
      uint8_t* k_layer = kv.k_base + il * kv.layer_stride;
      uint8_t* v_layer = kv.v_base + il * kv.layer_stride;
      const bool swiglu = spec.mlp == MlpKind::kSwiGlu;
      const Range wo_rows = row_share(E, matmul_row_granule(l.wo), tid, nt);
      const Range ff_rows = row_share(FF, ff_granule(l), tid, nt);
      const Range down_rows = row_share(E, matmul_row_granule(l.w_down), tid, nt);

      // 1. Q, K, V of this thread's heads: biases, per-head norms, rotation, and the K/V stored to their slots.
      {
        const WeightMatrix* qkv[3] = {&l.wq, &l.wk, &l.wv};
        prepare(qkv, 3, ws.x.data(), T, &l.attn_norm, &l.attn_norm_b);
      }
      matmul_rows(l.wq, in[0], ws.q.data(), qh.begin * HD, qh.end * HD);
      matmul_rows(l.wk, in[1], ws.k.data(), kh.begin * HD, kh.end * HD);
      matmul_rows(l.wv, in[2], ws.v.data(), vh.begin * HD, vh.end * HD);
      add_bias_rows(ws.q.data(), l.bq, T, QD, {qh.begin * HD, qh.end * HD});
      add_bias_rows(ws.k.data(), l.bk, T, KVD, {kh.begin * HD, kh.end * HD});
      add_bias_rows(ws.v.data(), l.bv, T, KVD, {vh.begin * HD, vh.end * HD});
      for (int64_t t = 0; t < T; ++t) {
        float* q = ws.q.data() + t * QD + qh.begin * HD;
        float* k = ws.k.data() + t * KVD + kh.begin * HD;
        if (spec.qk_norm) {
          rms_norm(q, l.q_norm.data(), qh.end - qh.begin, HD, hp.norm_eps, q);
          rms_norm(k, l.k_norm.data(), kh.end - kh.begin, HD, hp.norm_eps, k);
        }
        if (rotary) {
          const float* cos = ws.rope_cos.data() + t * rope_half;
          const float* sin = ws.rope_sin.data() + t * rope_half;
          rope_apply_angles(hp.rope, cos, sin, qh.end - qh.begin, HD, q);
          rope_apply_angles(hp.rope, cos, sin, kh.end - kh.begin, HD, k);
        }
      }
      for (int64_t h = kh.begin; h < kh.end; ++h)
        kv_store_rows(kv.dtype, ws.k.data() + h * HD, KVD, T, HD, k_layer + h * head_bytes, slot_bytes,
                      batch.slot_mapping.data());
      for (int64_t h = vh.begin; h < vh.end; ++h)
        kv_store_rows(kv.dtype, ws.v.data() + h * HD, KVD, T, HD, v_layer + h * head_bytes, slot_bytes,
                      batch.slot_mapping.data());
      warm.set({matmul_row_bytes(l.wo, wo_rows.begin, wo_rows.end)});
      barrier();

      // 2. Attention: this thread's share of the kernel's jobs.
      {
        PagedAttentionArgs a = args;
        a.k_cache = k_layer;
        a.v_cache = v_layer;
        paged_attention_in_region(a, pool, tid, attention_scratch);
      }
      barrier();

      // 3. Output projection: this thread's rows, added into the residual (sequential) or kept (parallel).
      float* attn_out = hp.parallel_residual ? ws.attn_proj.data() : ws.proj.data();
      {
        const Range r = wo_rows;
        const WeightMatrix* wo[1] = {&l.wo};
        prepare(wo, 1, ws.attn.data(), T, nullptr, nullptr);
        matmul_rows(l.wo, in[0], attn_out, r.begin, r.end);
        add_bias_rows(attn_out, l.bo, T, E, r);
        if (!hp.parallel_residual)
          for (int64_t t = 0; t < T; ++t)
            add_in_place(ws.x.data() + t * E + r.begin, attn_out + t * E + r.begin, r.end - r.begin);
      }
      if (swiglu)
        warm.set({matmul_row_bytes(l.w_gate, ff_rows.begin, ff_rows.end),
                  matmul_row_bytes(l.w_up, ff_rows.begin, ff_rows.end)});
      else
        warm.set({matmul_row_bytes(l.w_up, ff_rows.begin, ff_rows.end)});
      barrier();

      // 4. Feed-forward: gate and up of the same rows, then SwiGLU on them (or up, its bias and GELU).
      float* hidden = swiglu ? ws.gate.data() : ws.up.data();
      if (swiglu) {
        const WeightMatrix* gate_up[2] = {&l.w_gate, &l.w_up};
        prepare(gate_up, 2, ws.x.data(), T, &l.ffn_norm, &l.ffn_norm_b);
        const Range r = ff_rows;
        matmul_rows(l.w_gate, in[0], ws.gate.data(), r.begin, r.end);
        matmul_rows(l.w_up, in[1], ws.up.data(), r.begin, r.end);
        for (int64_t t = 0; t < T; ++t)
          silu_mul(ws.gate.data() + t * FF + r.begin, ws.up.data() + t * FF + r.begin, r.end - r.begin);
      } else {
        const Range r = ff_rows;
        const WeightMatrix* up[1] = {&l.w_up};
        prepare(up, 1, ws.x.data(), T, &l.ffn_norm, &l.ffn_norm_b);
        matmul_rows(l.w_up, in[0], ws.up.data(), r.begin, r.end);
        add_bias_rows(ws.up.data(), l.b_up, T, FF, r);
        for (int64_t t = 0; t < T; ++t) gelu(hp.gelu, ws.up.data() + t * FF + r.begin, r.end - r.begin);
      }
      const bool down_cols = down_by_cols(l);
      if (down_cols) {
        const size_t x_bytes = matmul_input_row_bytes(l.w_down);
        for (int64_t t = 0; t < T; ++t)
          matmul_prepare_cols(l.w_down, hidden + t * FF, ff_rows.begin, ff_rows.end,
                              ws.team_down_xq.data() + t * x_bytes);
      }
      warm.set({matmul_row_bytes(l.w_down, down_rows.begin, down_rows.end)});
      barrier();

      // 5. Down projection: this thread's rows, added into the residual.
      {
        const Range r = down_rows;
        const WeightMatrix* down[1] = {&l.w_down};
        if (down_cols)
          in[0] = MatmulInput{hidden, ws.team_down_xq.data(), matmul_input_row_bytes(l.w_down), T};
        else
          prepare(down, 1, hidden, T, nullptr, nullptr);
        matmul_rows(l.w_down, in[0], ws.proj.data(), r.begin, r.end);
        add_bias_rows(ws.proj.data(), l.b_down, T, E, r);
        for (int64_t t = 0; t < T; ++t) {
          float* x = ws.x.data() + t * E;
          const float* p = ws.proj.data() + t * E;
          if (hp.parallel_residual) {
            const float* a = ws.attn_proj.data() + t * E;
            for (int64_t i = r.begin; i < r.end; ++i) x[i] = (p[i] + x[i]) + a[i];  // (mlp + x) + attn, as llama.cpp
          } else {
            add_in_place(x + r.begin, p + r.begin, r.end - r.begin);
          }
        }
      }
      if (il + 1 < hp.n_layer) {
        const LayerWeights& next = w.layers[il + 1];
        warm.set({matmul_row_bytes(next.wq, qh.begin * HD, qh.end * HD),
                  matmul_row_bytes(next.wk, kh.begin * HD, kh.end * HD),
                  matmul_row_bytes(next.wv, vh.begin * HD, vh.end * HD)});
      } else {
        const Range r = row_share(hp.n_vocab, matmul_row_granule(w.output), tid, nt);
        warm.set({matmul_row_bytes(w.output, r.begin, r.end)});
      }
      barrier();
    }

    // Output norm and head for the rows that need logits: this thread's share of the vocabulary.
    if (n_rows == 0) return;
    // The residual rows that need logits, gathered into proj ([n_rows, E]; split by rows as the norm is).
    const Range gather = split_rows(n_rows) ? share(n_rows, tid, nt) : Range{0, n_rows};
    thread_local std::vector<float> own_rows;
    if (!split_rows(n_rows)) own_rows.resize(static_cast<size_t>(n_rows * E));
    float* rows = split_rows(n_rows) ? ws.proj.data() : own_rows.data();
    for (int64_t i = gather.begin; i < gather.end; ++i)
      std::memcpy(rows + i * E, ws.x.data() + batch.logit_rows[i] * E, sizeof(float) * E);
    const WeightMatrix* head[1] = {&w.output};
    prepare(head, 1, rows, n_rows, &w.output_norm, &w.output_norm_b);
    const Range r = row_share(hp.n_vocab, matmul_row_granule(w.output), tid, nt);
    matmul_rows(w.output, in[0], logits.data(), r.begin, r.end);
  });
}

}  // namespace pagoda
