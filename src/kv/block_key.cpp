#include "kv/block_key.h"

#include "util/sha256.h"

namespace pagoda {
namespace {

// Length-prefixed, so that ("ab", "c") and ("a", "bc") never hash alike. The length is the host's uint64_t bytes
// (little-endian on x86-64): part of the key layout that tests/unit/kv/block_key_test.cpp pins.
void update_field(Sha256& h, const void* data, uint64_t size) {
  h.update(&size, sizeof size);
  h.update(data, size);
}

}  // namespace

BlockKey compute_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                           const CacheNamespace& ns) {
  Sha256 h;
  const uint8_t has_parent = parent.has_value() ? 1 : 0;
  h.update(&has_parent, 1);
  if (parent) h.update(parent->data(), parent->size());
  update_field(h, tokens.data(), tokens.size_bytes());
  update_field(h, ns.model_id.data(), ns.model_id.size());
  update_field(h, ns.tenant.data(), ns.tenant.size());
  update_field(h, ns.cache_salt.data(), ns.cache_salt.size());
  update_field(h, ns.anchor_digest.data(), ns.anchor_digest.size());
  return h.finish();
}

}  // namespace pagoda
