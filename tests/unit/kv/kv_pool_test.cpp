#include "kv/kv_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace pagoda {

TEST(KvPool, SizesLayoutAndCopyOnWrite) {
  KvPoolShape shape{2, 4, 16, 2, 8};
  EXPECT_EQ(shape.bytes_per_block(), 2u * 2 * 16 * 2 * 8 * 4);
  EXPECT_EQ(KvPool::blocks_for_budget(shape, shape.bytes_per_block() * 3 + 5), 3);
  auto pool = KvPool::create(shape);
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  KvPool& p = **pool;
  EXPECT_EQ(p.shape().token_capacity(), 64);
  // Slot s of layer l starts at k(l) + s * n_kv_heads * head_dim values.
  auto kf = [&](int64_t l) { return reinterpret_cast<float*>(p.k(l)); };
  auto vf = [&](int64_t l) { return reinterpret_cast<float*>(p.v(l)); };
  for (int64_t l = 0; l < 2; ++l)
    for (int i = 0; i < 16 * 16; ++i) kf(l)[16 * 16 + i] = vf(l)[16 * 16 + i] = static_cast<float>(l * 1000 + i);
  ASSERT_TRUE(p.copy_block(BlockId{1}, BlockId{3}, 5).ok());
  for (int64_t l = 0; l < 2; ++l) {
    for (int i = 0; i < 5 * 16; ++i) EXPECT_EQ(kf(l)[3 * 16 * 16 + i], static_cast<float>(l * 1000 + i));
    EXPECT_EQ(vf(l)[3 * 16 * 16 + 5 * 16 - 1], static_cast<float>(l * 1000 + 5 * 16 - 1));
    EXPECT_NE(vf(l)[3 * 16 * 16 + 5 * 16], static_cast<float>(l * 1000 + 5 * 16));  // slot 5 is not copied
  }
  EXPECT_NE(p.describe().find("4 blocks of 16 tokens = 64 tokens"), std::string::npos) << p.describe();
  EXPECT_NE(p.describe().find("(f32)"), std::string::npos) << p.describe();
}

TEST(KvPool, ElementTypesSizeBlocksAndCopyTheirBytes) {
  // One slot holds n_kv_heads * head_dim = 64 values: 256 bytes in f32, 128 in f16 / bf16, 2 * 34 in q8_0.
  const std::pair<KvDtype, int64_t> cases[] = {
      {KvDtype::kF32, 256}, {KvDtype::kF16, 128}, {KvDtype::kBF16, 128}, {KvDtype::kQ8_0, 68}};
  for (const auto& [dtype, slot_bytes] : cases) {
    KvPoolShape shape{3, 4, 16, 2, 32, dtype};
    EXPECT_EQ(shape.slot_bytes(), slot_bytes) << kv_dtype_name(dtype);
    EXPECT_EQ(shape.bytes_per_block(), static_cast<uint64_t>(2 * 3 * 16 * slot_bytes));
    EXPECT_EQ(KvPool::blocks_for_budget(shape, uint64_t{1} << 20), (int64_t{1} << 20) / (2 * 3 * 16 * slot_bytes));
    auto pool = KvPool::create(shape);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    KvPool& p = **pool;
    p.prefault();
    for (int64_t l = 0; l < 3; ++l)
      for (int64_t i = 0; i < 16 * slot_bytes; ++i) p.k(l)[16 * slot_bytes + i] = static_cast<uint8_t>(l + i);
    ASSERT_TRUE(p.copy_block(BlockId{1}, BlockId{2}, 3).ok());
    for (int64_t l = 0; l < 3; ++l) {
      for (int64_t i = 0; i < 3 * slot_bytes; ++i) ASSERT_EQ(p.k(l)[2 * 16 * slot_bytes + i], static_cast<uint8_t>(l + i));
      EXPECT_EQ(p.k(l)[2 * 16 * slot_bytes + 3 * slot_bytes], 0);  // only the slots asked for
    }
  }
  // Q8_0 blocks never straddle heads.
  auto odd = KvPool::create({1, 4, 16, 2, 48, KvDtype::kQ8_0});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("multiple of 32"), std::string::npos) << odd.error().message;
  EXPECT_NE(odd.error().message.find("48"), std::string::npos) << odd.error().message;
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

namespace pagoda {
namespace {

// Device memory stood in for by host vectors, recording the copies the pool asks for (the CUDA one is
// src/cuda/cuda_forward.h's CudaKvMemory, behind model/device_forward.cpp).
class FakeDeviceMemory final : public KvDeviceMemory {
 public:
  explicit FakeDeviceMemory(size_t bytes) : k_(bytes), v_(bytes) {}
  uint8_t* k() override { return k_.data(); }
  uint8_t* v() override { return v_.data(); }
  Status copy(int64_t src, int64_t dst, int64_t bytes, int64_t count, int64_t stride) override {
    if (fail) return make_error("device copy failed");
    for (int64_t i = 0; i < count; ++i) {
      std::copy_n(k_.data() + src + i * stride, bytes, k_.data() + dst + i * stride);
      std::copy_n(v_.data() + src + i * stride, bytes, v_.data() + dst + i * stride);
    }
    ++copies;
    return Status::success();
  }
  std::string where() const override { return "fake device memory"; }
  bool fail = false;
  int copies = 0;

 private:
  std::vector<uint8_t> k_, v_;
};

TEST(KvPool, OnDeviceUsesTheDevicesAddressesAndCopies) {
  const KvPoolShape shape{2, 4, 16, 2, 8, KvDtype::kF16};
  auto memory = std::make_unique<FakeDeviceMemory>(static_cast<size_t>(shape.n_layer * shape.layer_bytes()));
  FakeDeviceMemory* m = memory.get();
  auto pool = KvPool::create_on_device(shape, std::move(memory));
  ASSERT_TRUE(pool.ok()) << pool.error().message;
  KvPool& p = **pool;
  EXPECT_TRUE(p.on_device());
  EXPECT_EQ(p.k(0), m->k());
  EXPECT_EQ(p.v(1), m->v() + shape.layer_bytes());
  p.prefault();  // nothing to touch on the host
  const int64_t block_bytes = shape.block_size * shape.slot_bytes();
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t i = 0; i < block_bytes; ++i) p.k(l)[block_bytes + i] = p.v(l)[block_bytes + i] = uint8_t(l * 7 + i);
  ASSERT_TRUE(p.copy_block(BlockId{1}, BlockId{3}, 5).ok());
  EXPECT_EQ(m->copies, 1);  // one call for every layer
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t i = 0; i < 5 * shape.slot_bytes(); ++i) {
      ASSERT_EQ(p.k(l)[3 * block_bytes + i], uint8_t(l * 7 + i));
      ASSERT_EQ(p.v(l)[3 * block_bytes + i], uint8_t(l * 7 + i));
    }
    EXPECT_EQ(p.k(l)[3 * block_bytes + 5 * shape.slot_bytes()], 0);  // slot 5 is not copied
  }
  EXPECT_NE(p.describe().find("in fake device memory"), std::string::npos) << p.describe();
  m->fail = true;
  const Status st = p.copy_block(BlockId{0}, BlockId{2}, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "device copy failed");
  // The shape is checked as for a host pool; a pool needs its memory.
  EXPECT_FALSE(KvPool::create_on_device({2, 0, 16, 2, 8}, std::make_unique<FakeDeviceMemory>(16)).ok());
  EXPECT_FALSE(KvPool::create_on_device(shape, nullptr).ok());
}

}  // namespace
}  // namespace pagoda
