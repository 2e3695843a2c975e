// The attended state warm start hands to the last prompt token in place of a full KV cache: per layer and KV
// head, n rows of (key, value, log-mass bias). A compressed summary (kv_summary.h) has n = m slots; the
// baselines use the same shape for a neighbour's whole exact prefix (bias 0) or nothing at all (n = 0).
// Row j sits at position j; keys are stored rotated to that position (RoPE families), so the last token runs at
// position n and attends with logit q.k_j * scale + bias_j.
#pragma once

#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace pagoda::warmstart {

struct SlotCache {
  int64_t n_layer = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t n_slots = 0;
  std::vector<float> rows;  // [n_layer, n_kv_heads, n_slots, row_width()]: key (head_dim), value (head_dim), bias

  static SlotCache empty_for(const ModelHParams& hp, int64_t n_slots) {
    SlotCache c;
    c.n_layer = hp.n_layer;
    c.n_kv_heads = hp.n_head_kv;
    c.head_dim = hp.head_dim;
    c.n_slots = n_slots;
    c.rows.assign(static_cast<size_t>(c.n_layer * c.n_kv_heads * n_slots * c.row_width()), 0.0f);
    return c;
  }
  int64_t row_width() const { return 2 * head_dim + 1; }
  // The n_slots rows of one layer and KV head.
  float* head_rows(int64_t layer, int64_t kv_head) {
    return rows.data() + ((layer * n_kv_heads + kv_head) * n_slots) * row_width();
  }
  const float* head_rows(int64_t layer, int64_t kv_head) const {
    return rows.data() + ((layer * n_kv_heads + kv_head) * n_slots) * row_width();
  }
  bool same_shape(const SlotCache& o) const {
    return n_layer == o.n_layer && n_kv_heads == o.n_kv_heads && head_dim == o.head_dim && n_slots == o.n_slots;
  }
  uint64_t bytes() const { return rows.size() * sizeof(float); }
};

}  // namespace pagoda::warmstart
