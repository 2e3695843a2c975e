// The KV cache of one sequence, stored contiguously: the plain single-sequence path that the paged engine
// (issue #3) is checked against.
#pragma once

#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace pagoda {

class ContiguousKvCache {
 public:
  ContiguousKvCache(const ModelHParams& hp, int64_t capacity)
      : capacity_(capacity),
        kv_dim_(hp.kv_dim()),
        k_(static_cast<size_t>(hp.n_layer * capacity * hp.kv_dim())),
        v_(k_.size()) {}

  int64_t capacity() const { return capacity_; }  // tokens
  int64_t length() const { return length_; }      // tokens stored
  void set_length(int64_t n) { length_ = n; }
  void clear() { length_ = 0; }

  // [capacity, n_kv_heads, head_dim] for one layer.
  float* k(int64_t layer) { return k_.data() + layer * capacity_ * kv_dim_; }
  float* v(int64_t layer) { return v_.data() + layer * capacity_ * kv_dim_; }

 private:
  int64_t capacity_;
  int64_t kv_dim_;
  int64_t length_ = 0;
  std::vector<float> k_;  // [n_layer, capacity, n_kv_heads, head_dim]
  std::vector<float> v_;  // [n_layer, capacity, n_kv_heads, head_dim]
};

}  // namespace pagoda
