// Strong ids and handles of the KV block manager.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pagoda {

struct BlockId {
  int32_t value = 0;
  auto operator<=>(const BlockId&) const = default;
};

struct SeqId {
  int64_t value = 0;
  auto operator<=>(const SeqId&) const = default;
};

// A block id stamped with the block's generation when it was handed out. The generation changes every time the
// block returns to the free list or is evicted, so a handle kept past that point is detectably stale.
struct BlockHandle {
  BlockId id;
  uint32_t generation = 0;
  bool operator==(const BlockHandle&) const = default;
};

// SHA-256 of (parent key, token ids, extra keys): the prefix-cache key of a full block.
using BlockKey = std::array<uint8_t, 32>;

struct BlockKeyHasher {
  size_t operator()(const BlockKey& k) const {
    size_t h;
    std::memcpy(&h, k.data(), sizeof h);  // already uniformly distributed
    return h;
  }
};

struct SeqIdHasher {
  size_t operator()(const SeqId& s) const { return static_cast<size_t>(s.value) * 0x9e3779b97f4a7c15ull; }
};

}  // namespace pagoda
