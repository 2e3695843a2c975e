#include "kv/block_key.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda {

TEST(BlockKey, DependsOnParentTokensAndEveryNamespaceField) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5};
  const CacheNamespace ns{"model-x", "", "", ""};
  const BlockKey k = compute_block_key(std::nullopt, a, ns);
  EXPECT_EQ(k, compute_block_key(std::nullopt, a, ns));
  EXPECT_NE(k, compute_block_key(std::nullopt, b, ns));
  EXPECT_NE(k, compute_block_key(k, a, ns));
  EXPECT_NE(k, compute_block_key(std::nullopt, a, CacheNamespace{"model-y", "", "", ""}));
  EXPECT_NE(k, compute_block_key(std::nullopt, a, CacheNamespace{"model-x", "tenant-1", "", ""}));
  EXPECT_NE(k, compute_block_key(std::nullopt, a, CacheNamespace{"model-x", "", "salt-1", ""}));
  EXPECT_NE(k, compute_block_key(std::nullopt, a, CacheNamespace{"model-x", "", "", "anchor"}));
  // A tenant is not a salt: the same string in the other field gives another key.
  EXPECT_NE(compute_block_key(std::nullopt, a, CacheNamespace{"model-x", "t", "", ""}),
            compute_block_key(std::nullopt, a, CacheNamespace{"model-x", "", "t", ""}));
  // Field boundaries are part of the key: moving bytes between fields changes it.
  EXPECT_NE(compute_block_key(std::nullopt, a, CacheNamespace{"ab", "c", "", ""}),
            compute_block_key(std::nullopt, a, CacheNamespace{"a", "bc", "", ""}));
}

// The key layout pinned: SHA-256 of has_parent (1 byte), the parent key, then each field as its length (uint64_t,
// little-endian) and bytes: tokens (int32_t, little-endian), model id, tenant, cache salt, anchor digest. The digests
// were computed independently (Python's hashlib over those bytes); a change of the layout or of the hash invalidates
// every cached block and every hash routers have indexed from the KV events, and fails here.
TEST(BlockKey, PinnedDigestsOfTheKeyLayout) {
  const auto hex = [](const BlockKey& k) {
    static const char kDigits[] = "0123456789abcdef";
    std::string out;
    for (uint8_t b : k) out += {kDigits[b >> 4], kDigits[b & 15]};
    return out;
  };
  // Empty: SHA-256 of 41 zero bytes.
  EXPECT_EQ(hex(compute_block_key(std::nullopt, {}, CacheNamespace{})),
            "9e1736c43d19118e6ce4302118af337109491ecc52757dfb949bad6a7940b0c2");
  const std::vector<int32_t> first = {1, 2, 3, 4}, second = {5, 6, 7, -1};
  const BlockKey k1 = compute_block_key(std::nullopt, first, CacheNamespace{"model-x", "", "", ""});
  EXPECT_EQ(hex(k1), "2423d57d54d97cb9f27da9b28de8f674b69d73b7cd78962152138f0590b6e950");
  EXPECT_EQ(hex(compute_block_key(k1, second, CacheNamespace{"model-x", "tenant-1", "salt-1", "anchor"})),
            "6dd5f16c2a8dbb952a0af67f12c357ebe0d889ab51d9f6e2156003a4093ef99b");
}

}  // namespace pagoda
