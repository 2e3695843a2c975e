// The cross-prompt projector: per layer and KV head, a map from a source prompt's summary to a similar target
// prompt's, fitted by ridge regression on paraphrase pairs. A dense map over all m slots x (2d+1) would hold
// (m(2d+1))^2 weights per head; pagoda offers two structured forms, both shared across the m slots (slot j of the
// source maps to slot j of the target; slots are ordered by position, so paraphrases line up):
//   - kShared: one affine map of the whole slot row (key, value, bias): (2d+2) x (2d+1) weights per head;
//   - kBlockDiagonal: keys from keys, values from values, bias from bias, each affine: 2(d+1)d + 2 per head.
// And the seed's literal form, which mixes slots instead of coordinates:
//   - kSlotMixing: target = M * source, M an m x m matrix per layer and head applied to the m slot rows (key,
//     value and bias move together): m^2 weights per head.
// And one that sees the target, not only the source:
//   - kTargetAware: the shared map with k more inputs per slot row, phi = B (e_target - e_source): the difference of
//     the two prompts' embeddings (prompt_embedding.h) on B, the top k principal directions of the training pairs'
//     differences (fitted, stored with the maps): (2d+2+k) x (2d+1) weights per head plus B (k x n_embd).
// kIdentity is the "no projection" ablation. The ridge penalty pulls toward the identity map, so a huge gamma
// gives back the source summary unchanged.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"
#include "warmstart/slot_cache.h"

namespace pagoda::warmstart {

enum class ProjectorForm { kIdentity, kShared, kBlockDiagonal, kSlotMixing, kTargetAware };

std::string to_string(ProjectorForm form);
Result<ProjectorForm> parse_projector_form(const std::string& text);

class Projector {
 public:
  Projector() = default;
  // kTargetAware needs target_features (k) and embedding_dim (n_embd); the other forms ignore them.
  Projector(ProjectorForm form, int64_t n_layer, int64_t n_kv_heads, int64_t head_dim, int64_t m,
            int64_t target_features = 0, int64_t embedding_dim = 0);

  ProjectorForm form() const { return form_; }
  int64_t n_layer() const { return n_layer_; }
  int64_t n_kv_heads() const { return n_kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t slots() const { return m_; }
  int64_t target_features() const { return k_; }
  int64_t embedding_dim() const { return embd_; }
  bool needs_target() const { return form_ == ProjectorForm::kTargetAware; }
  int64_t params_per_head() const;
  int64_t param_count() const { return params_per_head() * n_layer_ * n_kv_heads_; }
  // [n_layer, n_kv_heads, params_per_head()]: kShared row-major (2d+2) x (2d+1) (last row: intercept);
  // kBlockDiagonal: keys (d+1) x d, values (d+1) x d, bias (slope, intercept); kSlotMixing: M row-major m x m;
  // kTargetAware: row-major (2d+2+k) x (2d+1), rows: slot row, phi, intercept.
  std::vector<float>& weights() { return weights_; }
  const std::vector<float>& weights() const { return weights_; }

  // [k, embedding_dim] (kTargetAware): the directions phi is read on.
  std::vector<float>& target_basis() { return basis_; }
  const std::vector<float>& target_basis() const { return basis_; }

  // The projected target summary; `source` must have this projector's shape. `target_delta` (kTargetAware only:
  // [embedding_dim]) is the target's prompt embedding minus the source's.
  Result<SlotCache> apply(const SlotCache& source, std::span<const float> target_delta = {}) const;

 private:
  ProjectorForm form_ = ProjectorForm::kIdentity;
  int64_t n_layer_ = 0, n_kv_heads_ = 0, head_dim_ = 0, m_ = 0, k_ = 0, embd_ = 0;
  std::vector<float> weights_;
  std::vector<float> basis_;
};

// Fits every layer and head by ridge regression toward the identity: minimises
// sum ||x W - y||^2 + gamma' ||W - I||^2 over the slot rows of all pairs, gamma' = gamma * trace(X^T X) / cols;
// kSlotMixing: sum_pairs ||M X - Y||^2 + gamma' ||M - I||^2, X and Y the pair's m x (2d+1) slot matrices,
// gamma' = gamma * trace(sum X X^T) / m.
// kTargetAware also needs `target_deltas` (one per pair, e_target - e_source) and k.
Result<Projector> fit_projector(ProjectorForm form, const std::vector<std::pair<const SlotCache*, const SlotCache*>>& pairs,
                                double gamma, const std::vector<std::vector<float>>& target_deltas = {},
                                int64_t target_features = 8);

}  // namespace pagoda::warmstart
