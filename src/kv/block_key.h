// Prefix-cache keys of full KV blocks: key_i = SHA-256(key_{i-1} | token ids of block i | extra keys).
// The chain makes a block's key depend on the whole prefix before it; the extra keys keep caches apart that must
// not share (model identity, tenant, cache salt, and the digest of a verified anchor the sequence starts from).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "kv/block_types.h"

namespace pagoda {

// What besides the tokens decides whether two blocks' K/V are interchangeable.
struct CacheNamespace {
  std::string model_id;       // identity of the weights that computed the K/V
  std::string tenant;         // the API key's tenant (server with --api-keys-file); empty: no tenant
  std::string cache_salt;     // the request's own salt (OpenAI/vLLM `cache_salt`); empty: none
  std::string anchor_digest;  // the verified anchor whose pinned blocks the sequence starts from; empty: none
};

BlockKey compute_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                           const CacheNamespace& ns);

}  // namespace pagoda
