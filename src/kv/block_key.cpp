#include "kv/block_key.h"

#include <openssl/evp.h>

#include <cassert>

namespace pagoda {
namespace {

// Length-prefixed, so that ("ab", "c") and ("a", "bc") never hash alike.
void update_field(EVP_MD_CTX* ctx, const void* data, uint64_t size) {
  EVP_DigestUpdate(ctx, &size, sizeof size);
  if (size > 0) EVP_DigestUpdate(ctx, data, size);
}

}  // namespace

BlockKey compute_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                           const CacheNamespace& ns) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  assert(ctx != nullptr);
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  const uint8_t has_parent = parent.has_value() ? 1 : 0;
  EVP_DigestUpdate(ctx, &has_parent, 1);
  if (parent) EVP_DigestUpdate(ctx, parent->data(), parent->size());
  update_field(ctx, tokens.data(), tokens.size_bytes());
  update_field(ctx, ns.model_id.data(), ns.model_id.size());
  update_field(ctx, ns.tenant.data(), ns.tenant.size());
  update_field(ctx, ns.cache_salt.data(), ns.cache_salt.size());
  update_field(ctx, ns.anchor_digest.data(), ns.anchor_digest.size());
  BlockKey key{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, key.data(), &len);
  EVP_MD_CTX_free(ctx);
  assert(len == key.size());
  return key;
}

}  // namespace pagoda
