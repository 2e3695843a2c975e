#include "warmstart/slot_forward.h"

#include <cmath>
#include <limits>

namespace pagoda::warmstart {

namespace {

class SlotAttention final : public AttentionOverride {
 public:
  SlotAttention(const ModelHParams& hp, const SlotCache& slots) : hp_(hp), slots_(slots) {}

  void attend(int64_t layer, const float* q, const float* k, const float* v, int64_t num_tokens,
              float* out) override {
    const int64_t d = hp_.head_dim, n = slots_.n_slots, W = slots_.row_width();
    const int64_t group = hp_.n_head / hp_.n_head_kv;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    std::vector<double> logit(n + 1);
    for (int64_t t = 0; t < num_tokens; ++t)
      for (int64_t hq = 0; hq < hp_.n_head; ++hq) {
        const int64_t h = hq / group;
        const float* qh = q + t * hp_.q_dim() + hq * d;
        const float* self_k = k + t * hp_.kv_dim() + h * d;
        const float* self_v = v + t * hp_.kv_dim() + h * d;
        const float* rows = slots_.head_rows(layer, h);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= n; ++j) {
          const float* key = j < n ? rows + j * W : self_k;
          double s = 0;
          for (int64_t c = 0; c < d; ++c) s += static_cast<double>(qh[c]) * key[c];
          logit[j] = s * scale + (j < n ? rows[j * W + 2 * d] : 0.0);
          mx = std::max(mx, logit[j]);
        }
        double z = 0;
        for (int64_t j = 0; j <= n; ++j) z += (logit[j] = std::exp(logit[j] - mx));
        float* o = out + t * hp_.q_dim() + hq * d;
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j <= n; ++j) acc += logit[j] * (j < n ? rows[j * W + d + c] : self_v[c]);
          o[c] = static_cast<float>(acc / z);
        }
      }
  }

 private:
  const ModelHParams& hp_;
  const SlotCache& slots_;
};

}  // namespace

Status slot_forward(const Model& model, int32_t token, const SlotCache& slots, ThreadPool& pool,
                    TransformerWorkspace& ws, std::vector<float>& logits) {
  const ModelHParams& hp = model.hparams();
  if (slots.n_layer != hp.n_layer || slots.n_kv_heads != hp.n_head_kv || slots.head_dim != hp.head_dim)
    return make_error("warm start: the summary's shape does not match the model");
  SlotAttention attention(hp, slots);
  const int32_t position = static_cast<int32_t>(slots.n_slots);
  const int64_t slot0 = 0;
  const int32_t cu[2] = {0, 1};
  const int32_t kv_len = position + 1;
  const int32_t block0 = 0;
  const int32_t row0 = 0;
  ForwardBatch batch;
  batch.tokens = std::span<const int32_t>(&token, 1);
  batch.positions = std::span<const int32_t>(&position, 1);
  batch.slot_mapping = std::span<const int64_t>(&slot0, 1);
  batch.cu_seqlens_q = cu;
  batch.seq_lens_kv = std::span<const int32_t>(&kv_len, 1);
  batch.block_table = std::span<const int32_t>(&block0, 1);
  batch.max_blocks = 1;
  batch.logit_rows = std::span<const int32_t>(&row0, 1);
  batch.attention_override = &attention;
  KvStorage none;  // nothing is stored: the override supplies every key
  none.dtype = KvDtype::kF32;
  none.num_slots = 1;
  none.block_size = kv_len;
  return transformer_forward_batch(model, batch, none, ws, pool, logits);
}

}  // namespace pagoda::warmstart
