// The benchmark-only anchor re-check: cadence names, and the K/V hash covering exactly the anchor's slots.
#include "engine/anchor_recheck.h"

#include <gtest/gtest.h>

#include <cstring>

namespace pagoda {
namespace {

TEST(AnchorRecheck, CadenceNamesRoundTripAndUnknownIsAnError) {
  for (auto c : {AnchorRecheckCadence::kSession, AnchorRecheckCadence::kSegment, AnchorRecheckCadence::kBlock,
                 AnchorRecheckCadence::kToken, AnchorRecheckCadence::kStep}) {
    auto parsed = parse_anchor_recheck_cadence(anchor_recheck_cadence_name(c));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, c);
  }
  auto bad = parse_anchor_recheck_cadence("hourly");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("hourly"), std::string::npos);
}

class KvHash : public ::testing::Test {
 protected:
  void SetUp() override {
    KvPoolShape shape;
    shape.n_layer = 2;
    shape.num_blocks = 8;
    shape.block_size = 4;
    shape.n_kv_heads = 2;
    shape.head_dim = 8;
    shape.dtype = KvDtype::kF16;
    auto p = KvPool::create(shape);
    ASSERT_TRUE(p.ok());
    pool = std::move(*p);
    for (int64_t l = 0; l < shape.n_layer; ++l) {
      for (int64_t i = 0; i < shape.layer_bytes(); ++i) {
        pool->k(l)[i] = static_cast<uint8_t>(i * 7 + l);
        pool->v(l)[i] = static_cast<uint8_t>(i * 13 + l);
      }
    }
  }
  // Byte `offset` of slot `slot` (within block `block`) of layer l's K or V.
  uint8_t& byte(bool k, int64_t l, int64_t block, int64_t slot, int64_t offset) {
    const int64_t sb = pool->shape().slot_bytes();
    uint8_t* base = k ? pool->k(l) : pool->v(l);
    return base[(block * pool->shape().block_size + slot) * sb + offset];
  }
  std::unique_ptr<KvPool> pool;
  // An anchor of 6 tokens in blocks 5 and 2 (in that order): slots 0-3 of block 5 and 0-1 of block 2.
  const std::vector<BlockHandle> table = {BlockHandle{BlockId{5}, 0}, BlockHandle{BlockId{2}, 0}};
};

TEST_F(KvHash, EveryAnchorByteOfEveryLayerCountsAndNothingElse) {
  const Sha256Digest base = hash_kv_blocks(*pool, table, 6);
  EXPECT_EQ(base, hash_kv_blocks(*pool, table, 6));
  // Inside: the first and last anchor slot, K and V, both layers.
  for (bool k : {true, false})
    for (int64_t l : {0, 1})
      for (auto [block, slot] : {std::pair<int64_t, int64_t>{5, 0}, {2, 1}}) {
        byte(k, l, block, slot, 3) ^= 1;
        EXPECT_NE(base, hash_kv_blocks(*pool, table, 6)) << "layer " << l << " block " << block << " slot " << slot;
        byte(k, l, block, slot, 3) ^= 1;
      }
  // Outside: the slot after the anchor in its last block, and a block not in the table.
  byte(true, 0, 2, 2, 0) ^= 1;
  byte(false, 1, 3, 0, 0) ^= 1;
  EXPECT_EQ(base, hash_kv_blocks(*pool, table, 6));
  // The table order is part of what is hashed.
  const std::vector<BlockHandle> swapped = {table[1], table[0]};
  EXPECT_NE(hash_kv_blocks(*pool, table, 8), hash_kv_blocks(*pool, swapped, 8));
}

}  // namespace
}  // namespace pagoda
