// The KV cache of one sequence, stored contiguously: the plain single-sequence path that the paged engine
// (issue #3) is checked against.
#pragma once

#include <cstdint>
#include <new>
#include <string>

#include "kv/kv_dtype.h"
#include "model/hparams.h"
#include "util/huge_pages.h"
#include "util/memory_budget.h"
#include "util/result.h"

namespace pagoda {

class ContiguousKvCache {
 public:
  // Precondition: check_size(hp, capacity) succeeded (else std::bad_alloc). The memory is on huge pages where the
  // system gives them (util/huge_pages.h: decode streams every layer's K/V each token, as it does the weights).
  ContiguousKvCache(const ModelHParams& hp, int64_t capacity, KvDtype dtype = kDefaultKvDtype)
      : capacity_(capacity),
        slot_bytes_(kv_bytes(dtype, hp.kv_dim())),
        dtype_(dtype),
        k_(allocate(static_cast<size_t>(hp.n_layer * capacity * slot_bytes_))),
        v_(allocate(static_cast<size_t>(hp.n_layer * capacity * slot_bytes_))) {}

  // Bytes of K and V for `capacity` tokens, or an Error if that overflows or exceeds the machine's memory.
  static Result<uint64_t> check_size(const ModelHParams& hp, int64_t capacity, KvDtype dtype = kDefaultKvDtype) {
    return checked_allocation_bytes({2, static_cast<uint64_t>(hp.n_layer), static_cast<uint64_t>(capacity),
                                     static_cast<uint64_t>(kv_bytes(dtype, hp.kv_dim()))},
                                    "a KV cache of " + std::to_string(capacity) + " tokens");
  }

  int64_t capacity() const { return capacity_; }  // tokens
  int64_t length() const { return length_; }      // tokens stored
  void set_length(int64_t n) { length_ = n; }
  void clear() { length_ = 0; }

  KvDtype dtype() const { return dtype_; }
  int64_t slot_bytes() const { return slot_bytes_; }  // one token's K (or V) of one layer, stored
  // [capacity, n_kv_heads, head_dim] of dtype() for one layer.
  uint8_t* k(int64_t layer) { return k_.data() + layer * capacity_ * slot_bytes_; }
  uint8_t* v(int64_t layer) { return v_.data() + layer * capacity_ * slot_bytes_; }

 private:
  static HugePageBuffer allocate(size_t bytes) {
    HugePageBuffer b = HugePageBuffer::allocate(bytes);
    if (b.data() == nullptr && bytes > 0) throw std::bad_alloc();
    return b;
  }

  int64_t capacity_;
  int64_t slot_bytes_;
  KvDtype dtype_;
  int64_t length_ = 0;
  HugePageBuffer k_;  // [n_layer, capacity, n_kv_heads, head_dim] of dtype_
  HugePageBuffer v_;  // [n_layer, capacity, n_kv_heads, head_dim] of dtype_
};

}  // namespace pagoda
