// The KV cache of one sequence, stored contiguously: the plain single-sequence path that the paged engine
// (issue #3) is checked against.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/hparams.h"
#include "util/memory_budget.h"
#include "util/result.h"

namespace pagoda {

class ContiguousKvCache {
 public:
  // Precondition: check_size(hp, capacity) succeeded. The memory is not zeroed: only written rows are read.
  ContiguousKvCache(const ModelHParams& hp, int64_t capacity)
      : capacity_(capacity),
        kv_dim_(hp.kv_dim()),
        k_(new float[static_cast<size_t>(hp.n_layer * capacity * hp.kv_dim())]),
        v_(new float[static_cast<size_t>(hp.n_layer * capacity * hp.kv_dim())]) {}

  // Bytes of K and V for `capacity` tokens, or an Error if that overflows or exceeds the machine's memory.
  static Result<uint64_t> check_size(const ModelHParams& hp, int64_t capacity) {
    return checked_allocation_bytes({2, static_cast<uint64_t>(hp.n_layer), static_cast<uint64_t>(capacity),
                                     static_cast<uint64_t>(hp.kv_dim()), sizeof(float)},
                                    "a KV cache of " + std::to_string(capacity) + " tokens");
  }

  int64_t capacity() const { return capacity_; }  // tokens
  int64_t length() const { return length_; }      // tokens stored
  void set_length(int64_t n) { length_ = n; }
  void clear() { length_ = 0; }

  // [capacity, n_kv_heads, head_dim] for one layer.
  float* k(int64_t layer) { return k_.get() + layer * capacity_ * kv_dim_; }
  float* v(int64_t layer) { return v_.get() + layer * capacity_ * kv_dim_; }

 private:
  int64_t capacity_;
  int64_t kv_dim_;
  int64_t length_ = 0;
  std::unique_ptr<float[]> k_;  // [n_layer, capacity, n_kv_heads, head_dim]
  std::unique_ptr<float[]> v_;  // [n_layer, capacity, n_kv_heads, head_dim]
};

}  // namespace pagoda
