// KV-cache events: what a replica tells KV-aware routers (llm-d's indexer, SGLang Model Gateway) about the blocks
// its prefix cache holds, in the terms of vLLM's event stream (server/kv_events_publisher.h puts them on the wire).
//   stored   full, computed blocks registered in the prefix cache, a chain: each block's parent is the one before
//            it (the first's parent is `parent`, or none at the start of a sequence)
//   removed  registered blocks evicted (or otherwise dropped) from the cache
//   cleared  the whole cache is empty (a replica that starts announces it first)
// Hashes are 64-bit and never 0: the first 8 bytes (big-endian) of the block's content-addressed key, which covers
// its tokens, its whole prefix and its namespace (model, tenant, cache salt): two tenants never share a hash.
// Pinned anchor blocks and warm-start slots are never registered in the prefix cache (no prompt reaches them by its
// tokens alone), so they are never announced.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/block_types.h"

namespace pagoda {

struct KvCacheEvent {
  enum class Kind { kStored, kRemoved, kCleared };
  Kind kind = Kind::kStored;
  std::vector<uint64_t> block_hashes;      // stored: in chain order; removed: in eviction order
  std::optional<uint64_t> parent_hash;     // stored: the block before the first one, if any
  std::vector<int32_t> token_ids;          // stored: block_size tokens per block, concatenated
  int32_t block_size = 0;                  // stored
};

// A block key's 64-bit event hash (never 0).
uint64_t block_event_hash(const BlockKey& key);

}  // namespace pagoda
