#include "kv/kv_cache_events.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "kv/block_manager.h"

namespace pagoda {
namespace {

const CacheNamespace kEventsNs{"test-model", "", "", ""};

std::vector<int32_t> tokens_from(int n, int start) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(KvCacheEvents, HashesAreTheKeysFirstEightBytesAndNeverZero) {
  BlockKey k{};
  EXPECT_EQ(block_event_hash(k), 1u) << "an all-zero prefix is not 0";
  for (size_t i = 0; i < 8; ++i) k[i] = static_cast<uint8_t>(i + 1);
  k[8] = 0xff;  // beyond the first 8 bytes: not part of the hash
  EXPECT_EQ(block_event_hash(k), 0x0102030405060708ull);
}

TEST(KvCacheEvents, StoredChainsRemovedOnlyAnnouncedClearedFirst) {
  ManualClock clock;
  BlockManager bm({4, 4, 0}, clock);  // 4 blocks of 4 tokens
  // Cached before events are on: never announced, so its eviction is not announced either.
  bm.allocate(SeqId{1}, tokens_from(9, 500), kEventsNs);
  bm.mark_computed(SeqId{1}, 9);
  bm.free(SeqId{1});
  bm.enable_events();
  auto ev = bm.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvCacheEvent::Kind::kCleared);
  // 9 tokens: two full blocks, one chain in one event, the first with no parent.
  const auto prompt = tokens_from(9, 100);
  bm.allocate(SeqId{2}, prompt, kEventsNs);
  bm.mark_computed(SeqId{2}, 9);
  ev = bm.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvCacheEvent::Kind::kStored);
  ASSERT_EQ(ev[0].block_hashes.size(), 2u);
  EXPECT_FALSE(ev[0].parent_hash.has_value());
  EXPECT_EQ(ev[0].block_size, 4);
  EXPECT_EQ(ev[0].token_ids, std::vector<int32_t>(prompt.begin(), prompt.begin() + 8));
  std::set<uint64_t> announced(ev[0].block_hashes.begin(), ev[0].block_hashes.end());
  const uint64_t announced_last = ev[0].block_hashes.back();
  // Generated tokens fill the third block: stored with the second as its parent.
  std::optional<BlockCopy> copy;
  for (int32_t t : {7, 8, 9}) bm.append_slot(SeqId{2}, t, &copy);
  bm.mark_computed(SeqId{2}, 12);
  ev = bm.take_events();
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_TRUE(ev[0].parent_hash.has_value());
  EXPECT_EQ(*ev[0].parent_hash, announced_last) << "the second block is the third's parent";
  announced.insert(ev[0].block_hashes.begin(), ev[0].block_hashes.end());
  bm.free(SeqId{2});
  // A new prompt needs blocks: the cached ones are evicted, and only announced hashes are removed.
  bm.allocate(SeqId{3}, tokens_from(15, 900), kEventsNs);
  ev = bm.take_events();
  std::set<uint64_t> removed;
  for (const auto& e : ev)
    if (e.kind == KvCacheEvent::Kind::kRemoved) removed.insert(e.block_hashes.begin(), e.block_hashes.end());
  EXPECT_FALSE(removed.empty());
  for (uint64_t h : removed) EXPECT_TRUE(announced.count(h)) << "removed without being announced: " << h;
  EXPECT_EQ(ev.size(), 1u) << "evictions of one step join one event";
}

TEST(KvCacheEvents, TenantsNeverShareAHash) {
  ManualClock clock;
  BlockManager bm({8, 4, 0}, clock);
  bm.enable_events();
  (void)bm.take_events();
  const auto prompt = tokens_from(5, 10);
  bm.allocate(SeqId{1}, prompt, CacheNamespace{"m", "alice", "", ""});
  bm.mark_computed(SeqId{1}, 5);
  bm.allocate(SeqId{2}, prompt, CacheNamespace{"m", "bob", "", ""});
  bm.mark_computed(SeqId{2}, 5);
  const auto ev = bm.take_events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(ev[0].block_hashes[0], ev[1].block_hashes[0]);
}

}  // namespace
}  // namespace pagoda
