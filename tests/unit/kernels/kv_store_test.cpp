// The SIMD KV stores write the portable kv_store_row's bytes in every type, for random rows, exact ties, values
// beyond f16's range, subnormals and NaNs of every payload shape.
#include "kernels/cpu/kv_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/isa_skip.h"
#include "util/fp16.h"
#include "util/rng.h"

namespace pagoda {
namespace {

std::vector<float> hard_values() {
  std::vector<float> v;
  Rng rng(3);
  for (int i = 0; i < 2000; ++i) v.push_back(static_cast<float>((rng.next_double() * 2 - 1) * std::ldexp(1.0, i % 40 - 20)));
  // Ties for f16 (1 + k * 2^-11) and bf16 (1 + k * 2^-8), overflow, f16 subnormals, zeros of both signs.
  for (int k = 0; k < 16; ++k) v.push_back(1.0f + k * std::ldexp(1.0f, -11)), v.push_back(-1.0f - k * std::ldexp(1.0f, -8));
  for (float f : {65504.0f, 65519.0f, 65520.0f, 1e6f, -1e30f, 6e-8f, 3e-8f, 1e-7f, 0.0f, -0.0f, INFINITY, -INFINITY})
    v.push_back(f);
  // Bit patterns: NaNs with various payloads (quiet and signalling), the largest finite float.
  for (uint32_t bits : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0x7fffffffu, 0xff812345u, 0x7f7fffffu}) {
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  while (v.size() % 32 != 0) v.push_back(0.5f);
  return v;
}

TEST(KvStore, EverySimdBuildWritesThePortableBytes) {
  const std::vector<float> x = hard_values();
  const int64_t n = static_cast<int64_t>(x.size());
  int compared = 0;
  for (KvDtype t : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0}) {
    std::vector<uint8_t> want(kv_bytes(t, n), 0xAA);
    kv_store_row(t, x.data(), n, want.data());
    for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
      if (!isa_runs_or_skip(isa)) continue;
      std::vector<uint8_t> got(want.size(), 0x55);
      ASSERT_TRUE(kv_store_row_isa(t, x.data(), n, got.data(), isa)) << kernel_isa_name(isa);
      ++compared;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(want[i], got[i]) << kv_dtype_name(t) << " " << kernel_isa_name(isa) << " byte " << i;
    }
    // A short tail (not a multiple of 8) goes through the scalar path of the SIMD build.
    if (t != KvDtype::kQ8_0) {
      std::vector<uint8_t> a(kv_bytes(t, 13)), b(a.size());
      kv_store_row(t, x.data() + 5, 13, a.data());
      if (isa_runs_or_skip(KernelIsa::kAvx2)) {
        ASSERT_TRUE(kv_store_row_isa(t, x.data() + 5, 13, b.data(), KernelIsa::kAvx2));
        EXPECT_EQ(a, b);
      }
    }
  }
  EXPECT_GE(compared, 4);
}

TEST(KvStore, RowsGoToTheirSlots) {
  std::vector<float> src(3 * 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.25f;
  const int64_t slots[3] = {4, 0, 2};
  const int64_t slot_bytes = kv_bytes(KvDtype::kF16, 64);
  std::vector<uint8_t> pool(5 * slot_bytes, 0);
  kv_store_rows(KvDtype::kF16, src.data(), 64, 3, 64, pool.data(), slot_bytes, slots);
  for (int r = 0; r < 3; ++r) {
    std::vector<float> back(64);
    kv_load_row(KvDtype::kF16, pool.data() + slots[r] * slot_bytes, 64, back.data());
    for (int i = 0; i < 64; ++i) EXPECT_EQ(back[i], src[r * 64 + i]);
  }
  for (int64_t i = 0; i < slot_bytes; ++i) EXPECT_EQ(pool[1 * slot_bytes + i], 0);  // slot 1 untouched
}

}  // namespace
}  // namespace pagoda
