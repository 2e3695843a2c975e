#include "kv/block_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "util/rng.h"

namespace pagoda {
namespace {

const CacheNamespace kNs{"test-model", "", "", ""};

std::vector<int32_t> iota_tokens(int n, int start = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

void expect_ok(const BlockManager& bm) {
  Status st = bm.check_invariants();
  ASSERT_TRUE(st.ok()) << st.error().message;
}

TEST(BlockManager, AllocateReservesPromptPlusOneStep) {
  ManualClock clock;
  BlockManager bm({8, 16, 0}, clock);
  EXPECT_EQ(bm.allocate(SeqId{1}, iota_tokens(16), kNs), 0);
  EXPECT_EQ(bm.block_handles(SeqId{1}).size(), 2u);  // 16 prompt tokens + 1 step -> 2 blocks
  EXPECT_EQ(bm.allocate(SeqId{2}, iota_tokens(15), kNs), 0);
  EXPECT_EQ(bm.block_handles(SeqId{2}).size(), 1u);
  EXPECT_EQ(bm.stats().used_blocks, 3);
  EXPECT_EQ(bm.stats().slack_slots, (32 - 16) + (16 - 15));
  expect_ok(bm);
}

TEST(BlockManager, PrefixHitReusesComputedFullBlocksButNeverTheLastPromptBlock) {
  ManualClock clock;
  BlockManager bm({16, 16, 0}, clock);
  const auto prompt = iota_tokens(40);
  bm.allocate(SeqId{1}, prompt, kNs);
  bm.mark_computed(SeqId{1}, 40);
  const auto a_table = std::vector<BlockHandle>(bm.block_handles(SeqId{1}).begin(), bm.block_handles(SeqId{1}).end());
  // While A runs, B shares A's two full blocks.
  EXPECT_EQ(bm.allocate(SeqId{2}, prompt, kNs), 32);
  EXPECT_EQ(bm.block_handles(SeqId{2})[0].id, a_table[0].id);
  EXPECT_EQ(bm.block_handles(SeqId{2})[1].id, a_table[1].id);
  EXPECT_NE(bm.block_handles(SeqId{2})[2].id, a_table[2].id);
  EXPECT_EQ(bm.ref_count(a_table[0].id), 2);
  expect_ok(bm);
  // After both finish, the full blocks stay cached and a later request still hits.
  bm.free(SeqId{1});
  bm.free(SeqId{2});
  EXPECT_EQ(bm.stats().cached_free_blocks, 2);
  expect_ok(bm);
  // A prompt of exactly 32 tokens hits only its first block: the block with the last token is recomputed.
  EXPECT_EQ(bm.allocate(SeqId{3}, iota_tokens(32), kNs), 16);
  // A different namespace (tenant salt) never hits.
  EXPECT_EQ(bm.allocate(SeqId{4}, prompt, CacheNamespace{"test-model", "", "tenant-b", ""}), 0);
  // A different first block breaks the chain even if the second block's tokens match.
  auto other = prompt;
  other[0] = 7;
  EXPECT_EQ(bm.allocate(SeqId{5}, other, kNs), 0);
  EXPECT_EQ(bm.stats().prefix_hit_tokens, 32 + 16);
  EXPECT_EQ(bm.stats().prefix_query_tokens, 40 * 4 + 32);
  expect_ok(bm);
}

TEST(BlockManager, PrefixCachingOffNeverShares) {
  ManualClock clock;
  BlockManager bm({16, 16, 0, /*enable_prefix_caching=*/false}, clock);
  const auto prompt = iota_tokens(40);
  bm.allocate(SeqId{1}, prompt, kNs);
  bm.mark_computed(SeqId{1}, 40);
  EXPECT_EQ(bm.allocate(SeqId{2}, prompt, kNs), 0);
  bm.free(SeqId{1});
  EXPECT_EQ(bm.allocate(SeqId{3}, prompt, kNs), 0);
  EXPECT_EQ(bm.stats().prefix_hit_tokens, 0);
  EXPECT_EQ(bm.stats().cached_free_blocks, 0);
  expect_ok(bm);
}

TEST(BlockManager, UncomputedBlocksAreNotShared) {
  ManualClock clock;
  BlockManager bm({16, 16, 0}, clock);
  bm.allocate(SeqId{1}, iota_tokens(40), kNs);
  bm.mark_computed(SeqId{1}, 20);  // only block 0 is computed
  EXPECT_EQ(bm.allocate(SeqId{2}, iota_tokens(40), kNs), 16);
}

TEST(BlockManager, EvictsLeastRecentlyUsedCachedBlocksOnlyWhenFreeRunsOut) {
  ManualClock clock;
  BlockManager bm({4, 4, 0}, clock);
  // Three one-block prefixes (5 tokens each: block 0 full and cacheable, block 1 partial).
  for (int i = 0; i < 3; ++i) {
    auto p = iota_tokens(5, 1000 * (i + 1));
    bm.allocate(SeqId{i}, p, kNs);
    bm.mark_computed(SeqId{i}, 5);
    clock.advance(10);
    bm.free(SeqId{i});  // prefix i released at time 10 * (i + 1)
    expect_ok(bm);
  }
  EXPECT_EQ(bm.stats().cached_free_blocks, 3);
  EXPECT_EQ(bm.stats().free_blocks, 1);
  // Needs 2 blocks: takes the free one, then evicts the oldest cached prefix (prefix 0).
  bm.allocate(SeqId{10}, iota_tokens(5, 9000), kNs);
  EXPECT_EQ(bm.stats().evictions, 1);
  bm.free(SeqId{10});
  EXPECT_EQ(bm.allocate(SeqId{11}, iota_tokens(5, 1000), kNs), 0);  // prefix 0 was evicted
  EXPECT_EQ(bm.allocate(SeqId{12}, iota_tokens(5, 3000), kNs), 4);  // prefix 2 is still cached
  expect_ok(bm);
}

TEST(BlockManager, LruOrderFollowsTheClockOfRelease) {
  ManualClock clock;
  BlockManager bm({4, 4, 0}, clock);
  for (int i = 0; i < 2; ++i) {  // two 5-token prompts: block 0 full (cacheable), block 1 partial
    bm.allocate(SeqId{i}, iota_tokens(5, 1000 * (i + 1)), kNs);
    bm.mark_computed(SeqId{i}, 5);
  }
  clock.advance(5);
  bm.free(SeqId{1});  // prefix 1 released first: it is the older one
  clock.advance(5);
  bm.free(SeqId{0});
  EXPECT_EQ(bm.stats().cached_free_blocks, 2);
  EXPECT_EQ(bm.allocate(SeqId{2}, iota_tokens(5, 1000), kNs), 4);  // hit on prefix 0, 1 block from the free list
  bm.allocate(SeqId{3}, iota_tokens(3, 5000), kNs);                // the last free block
  EXPECT_EQ(bm.stats().evictions, 0);
  bm.allocate(SeqId{4}, iota_tokens(3, 6000), kNs);  // must evict: the least recently used is prefix 1
  EXPECT_EQ(bm.stats().evictions, 1);
  expect_ok(bm);
  for (int i = 2; i <= 4; ++i) bm.free(SeqId{i});
  EXPECT_EQ(bm.allocate(SeqId{5}, iota_tokens(5, 2000), kNs), 0);  // prefix 1 is gone
  EXPECT_EQ(bm.allocate(SeqId{6}, iota_tokens(5, 1000), kNs), 4);  // prefix 0 survived
  expect_ok(bm);
}

TEST(BlockManager, ForkSharesBlocksAndFirstAppendToSharedPartialBlockCopies) {
  ManualClock clock;
  BlockManager bm({8, 16, 0}, clock);
  bm.allocate(SeqId{1}, iota_tokens(20), kNs);
  bm.mark_computed(SeqId{1}, 20);
  bm.fork(SeqId{1}, SeqId{2});
  const BlockId shared_tail = bm.block_handles(SeqId{1})[1].id;
  EXPECT_EQ(bm.ref_count(shared_tail), 2);
  EXPECT_EQ(bm.ref_count(bm.block_handles(SeqId{1})[0].id), 2);
  expect_ok(bm);
  std::optional<BlockCopy> copy;
  ASSERT_TRUE(bm.can_append(SeqId{2}));
  const int64_t slot = bm.append_slot(SeqId{2}, 7, &copy);
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(copy->src, shared_tail);
  EXPECT_NE(copy->dst, shared_tail);
  EXPECT_EQ(copy->num_slots, 4);
  EXPECT_EQ(slot, static_cast<int64_t>(copy->dst.value) * 16 + 4);
  EXPECT_EQ(bm.ref_count(shared_tail), 1);
  // The parent's tail is its own again: no copy.
  bm.append_slot(SeqId{1}, 8, &copy);
  EXPECT_FALSE(copy.has_value());
  expect_ok(bm);
  bm.free(SeqId{1});
  bm.free(SeqId{2});
  EXPECT_EQ(bm.stats().used_blocks, 0);
  expect_ok(bm);
}

TEST(BlockManager, StaleHandlesAreDetected) {
  ManualClock clock;
  BlockManager bm({2, 4, 0}, clock);
  bm.allocate(SeqId{1}, iota_tokens(3), kNs);
  const BlockHandle h = bm.block_handles(SeqId{1})[0];
  EXPECT_TRUE(bm.is_current(h));
  bm.free(SeqId{1});
  EXPECT_FALSE(bm.is_current(h));
  bm.allocate(SeqId{2}, iota_tokens(3), kNs);  // the same physical block, a new generation
  EXPECT_EQ(bm.block_handles(SeqId{2})[0].id, h.id);
  EXPECT_FALSE(bm.is_current(h));
  EXPECT_TRUE(bm.is_current(bm.block_handles(SeqId{2})[0]));
}

TEST(BlockManager, AdmissionRespectsCapacityAndWatermark) {
  ManualClock clock;
  BlockManager bm({4, 4, 1}, clock);
  EXPECT_TRUE(bm.could_ever_allocate(10));   // 3 blocks + watermark 1 = 4
  EXPECT_FALSE(bm.could_ever_allocate(12));  // 4 blocks + 1 > 4
  EXPECT_TRUE(bm.can_allocate(iota_tokens(7), kNs));
  bm.allocate(SeqId{1}, iota_tokens(7), kNs);          // 2 blocks
  EXPECT_FALSE(bm.can_allocate(iota_tokens(7), kNs));  // 2 more would leave 0 < watermark
  EXPECT_TRUE(bm.can_allocate(iota_tokens(3), kNs));
  // Running sequences may use the watermark headroom.
  for (int i = 0; i < 1; ++i) bm.append_slot(SeqId{1}, 1, nullptr);  // token 8 fits block 1
  ASSERT_TRUE(bm.can_append(SeqId{1}));
  bm.append_slot(SeqId{1}, 2, nullptr);  // token 9 needs block 2
  EXPECT_EQ(bm.stats().used_blocks, 3);
  expect_ok(bm);
}

// Randomized churn: thousands of admit / append / compute / fork / free (finish, cancel, preempt) operations
// with prefix hits and evictions. A fake KV pool stores, per slot, a fingerprint of the token prefix that
// produced it, so any sharing or copy-on-write mistake shows up as a wrong fingerprint.
class BlockManagerChurn : public ::testing::TestWithParam<std::tuple<int, uint64_t>> {};

uint64_t extend_fingerprint(uint64_t prefix, int32_t token) {
  return (prefix ^ static_cast<uint64_t>(token)) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

TEST_P(BlockManagerChurn, InvariantsHoldAfterEveryOperation) {
  const auto [block_size, seed] = GetParam();
  ManualClock clock;
  const int32_t num_blocks = 48;
  BlockManager bm({num_blocks, block_size, 2}, clock);
  Rng rng(seed);
  std::vector<uint64_t> kv(static_cast<size_t>(num_blocks) * block_size, 0);  // fake K/V per slot
  struct Live {
    std::vector<int32_t> tokens;
    std::vector<uint64_t> fingerprints;  // of tokens[0..p]
    int64_t computed = 0;
  };
  std::map<int64_t, Live> live;
  std::vector<BlockHandle> retired;  // handles of freed sequences: must all be stale
  int64_t next_id = 0;
  int admitted = 0, hits = 0, forks = 0, frees = 0, copies = 0;
  const std::vector<std::vector<int32_t>> prefixes = {
      iota_tokens(3 * block_size + 1, 10), iota_tokens(2 * block_size, 500), iota_tokens(block_size / 2 + 1, 900)};

  auto compute = [&](int64_t id, Live& s, int64_t upto) {
    for (int64_t p = s.computed; p < upto; ++p) kv[bm.slot_of(SeqId{id}, p)] = s.fingerprints[p];
    s.computed = std::max(s.computed, upto);
    bm.mark_computed(SeqId{id}, s.computed);
  };
  auto check_kv = [&]() {
    for (auto& [id, s] : live)
      for (int64_t p = 0; p < s.computed; ++p)
        ASSERT_EQ(kv[bm.slot_of(SeqId{id}, p)], s.fingerprints[p]) << "seq " << id << " position " << p;
  };

  for (int op = 0; op < 4000; ++op) {
    clock.advance(1 + rng.next_u64() % 3);
    const uint64_t kind = rng.next_u64() % 10;
    if (kind < 3) {  // admit
      Live s;
      s.tokens = prefixes[rng.next_u64() % prefixes.size()];
      const int extra = static_cast<int>(rng.next_u64() % (2 * block_size));
      for (int i = 0; i < extra; ++i) s.tokens.push_back(static_cast<int32_t>(rng.next_u64() % 50));
      uint64_t fp = 0;
      for (int32_t t : s.tokens) s.fingerprints.push_back(fp = extend_fingerprint(fp, t));
      if (!bm.can_allocate(s.tokens, kNs)) continue;
      const int64_t id = next_id++;
      s.computed = bm.allocate(SeqId{id}, s.tokens, kNs);
      ASSERT_LT(s.computed, static_cast<int64_t>(s.tokens.size()));
      ASSERT_EQ(s.computed % block_size, 0);
      hits += s.computed > 0;
      ++admitted;
      // The cached prefix must hold exactly this prompt's K/V.
      for (int64_t p = 0; p < s.computed; ++p) ASSERT_EQ(kv[bm.slot_of(SeqId{id}, p)], s.fingerprints[p]);
      live.emplace(id, std::move(s));
    } else if (!live.empty()) {
      auto it = live.begin();
      std::advance(it, rng.next_u64() % live.size());
      const int64_t id = it->first;
      Live& s = it->second;
      if (kind < 5) {  // a step: compute the rest of the prompt (chunked) or append a token
        if (s.computed < static_cast<int64_t>(s.tokens.size())) {
          const int64_t chunk = 1 + rng.next_u64() % (2 * block_size);
          compute(id, s, std::min<int64_t>(s.tokens.size(), s.computed + chunk));
        } else if (bm.can_append(SeqId{id})) {
          const int32_t tok = static_cast<int32_t>(rng.next_u64() % 50);
          std::optional<BlockCopy> copy;
          bm.append_slot(SeqId{id}, tok, &copy);
          if (copy) {
            ++copies;
            for (int32_t i = 0; i < copy->num_slots; ++i)
              kv[copy->dst.value * block_size + i] = kv[copy->src.value * block_size + i];
          }
          s.tokens.push_back(tok);
          s.fingerprints.push_back(extend_fingerprint(s.fingerprints.back(), tok));
          compute(id, s, s.tokens.size());
        }
      } else if (kind < 6) {  // fork (n > 1)
        if (s.computed == static_cast<int64_t>(s.tokens.size())) {
          const int64_t child = next_id++;
          bm.fork(SeqId{id}, SeqId{child});
          Live copy = s;
          live.emplace(child, std::move(copy));
          ++forks;
        }
      } else {  // finish, cancel or preempt: all release through free()
        for (const BlockHandle& h : bm.block_handles(SeqId{id})) retired.push_back(h);
        bm.free(SeqId{id});
        live.erase(it);
        ++frees;
      }
    }
    Status st = bm.check_invariants();
    ASSERT_TRUE(st.ok()) << "after operation " << op << ": " << st.error().message;
    check_kv();
    if (op % 250 == 0) {
      // A retired handle may be current again only if a live table holds exactly it (a cached block re-acquired
      // by a prefix hit keeps its generation); otherwise it must be detected as stale.
      for (const BlockHandle& h : retired) {
        if (!bm.is_current(h)) continue;
        bool held = false;
        for (auto& [id, s] : live)
          for (const BlockHandle& cur : bm.block_handles(SeqId{id})) held |= cur == h;
        ASSERT_TRUE(held) << "stale handle to block " << h.id.value << " reported current";
      }
    }
  }
  EXPECT_GT(admitted, 300);
  EXPECT_GT(hits, 20);
  EXPECT_GT(forks, 20);
  EXPECT_GT(copies, 5);
  EXPECT_GT(bm.stats().evictions, 10);
  for (auto& [id, s] : live) bm.free(SeqId{id});
  EXPECT_EQ(bm.stats().used_blocks, 0);
  expect_ok(bm);
}

INSTANTIATE_TEST_SUITE_P(BlockSizesAndSeeds, BlockManagerChurn,
                         ::testing::Combine(::testing::Values(1, 4, 16), ::testing::Values(1u, 2u, 3u)));

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

TEST(BlockManagerStats, SlackIsAtMostOneTailBlockAndSharedBlocksCountOnce) {
  ManualClock clock;
  BlockManager bm({16, 4, 0}, clock);
  bm.allocate(SeqId{1}, iota_tokens(6), kNs);  // 2 blocks, 6 tokens: slack 2
  bm.fork(SeqId{1}, SeqId{2});                 // shares both blocks
  bm.allocate(SeqId{3}, iota_tokens(8), kNs);  // 8 + 1 -> 3 blocks, slack 4 (the reserved block)
  const BlockManagerStats st = bm.stats();
  EXPECT_EQ(st.slack_slots, 2 + 2 + 4);
  EXPECT_EQ(st.max_seq_slack_slots, 4);
  EXPECT_EQ(st.used_blocks, 5);
  EXPECT_EQ(st.filled_slots, 6 + 8);  // the forked blocks count once
  EXPECT_DOUBLE_EQ(st.useful_slot_fraction(), 14.0 / 20.0);
}

}  // namespace
}  // namespace pagoda
