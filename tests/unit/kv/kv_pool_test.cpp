#include "kv/kv_pool.h"

#include <gtest/gtest.h>

namespace pagoda {

TEST(KvPool, SizesLayoutAndCopyOnWrite) {
  KvPoolShape shape{2, 4, 16, 2, 8};
  EXPECT_EQ(shape.bytes_per_block(), 2u * 2 * 16 * 2 * 8 * 4);
  EXPECT_EQ(KvPool::blocks_for_budget(shape, shape.bytes_per_block() * 3 + 5), 3);
  auto pool = KvPool::create(shape);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  KvPool& p = **pool;
  EXPECT_EQ(p.shape().token_capacity(), 64);
  // Slot s of layer l starts at k(l) + s * n_kv_heads * head_dim.
  for (int64_t l = 0; l < 2; ++l)
    for (int i = 0; i < 16 * 16; ++i) p.k(l)[16 * 16 + i] = p.v(l)[16 * 16 + i] = static_cast<float>(l * 1000 + i);
  p.copy_block(BlockId{1}, BlockId{3}, 5);
  for (int64_t l = 0; l < 2; ++l) {
    for (int i = 0; i < 5 * 16; ++i) EXPECT_EQ(p.k(l)[3 * 16 * 16 + i], static_cast<float>(l * 1000 + i));
    EXPECT_EQ(p.v(l)[3 * 16 * 16 + 5 * 16 - 1], static_cast<float>(l * 1000 + 5 * 16 - 1));
  }
  EXPECT_NE(p.describe().find("4 blocks of 16 tokens = 64 tokens"), std::string::npos) << p.describe();
}

TEST(KvPool, RejectsAbsurdSizes) {
  EXPECT_FALSE(KvPool::create({2, 0, 16, 2, 8}).ok());
  auto huge = KvPool::create({1, int64_t{1} << 28, 16, 1, 8});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("more slots than int32"), std::string::npos) << huge.error().message;
  auto tib = KvPool::create({1000, int64_t{1} << 20, 16, 64, 128});
  ASSERT_FALSE(tib.ok());
  EXPECT_NE(tib.error().message.find("more than 1 TiB"), std::string::npos) << tib.error().message;
}

TEST(MemorySize, ParsesUnitsAndRejectsGarbage) {
  EXPECT_EQ(*parse_memory_size("2GiB"), uint64_t{2} << 30);
  EXPECT_EQ(*parse_memory_size("512MiB"), uint64_t{512} << 20);
  EXPECT_EQ(*parse_memory_size("1.5G"), uint64_t{3} << 29);
  EXPECT_EQ(*parse_memory_size("1000"), 1000u);
  EXPECT_EQ(*parse_memory_size("2GB"), 2000000000u);
  EXPECT_FALSE(parse_memory_size("").ok());
  EXPECT_FALSE(parse_memory_size("-1GiB").ok());
  EXPECT_FALSE(parse_memory_size("2 parsecs").ok());
  EXPECT_FALSE(parse_memory_size("nanGiB").ok());
  EXPECT_FALSE(parse_memory_size("1e300GiB").ok());
}

}  // namespace pagoda
