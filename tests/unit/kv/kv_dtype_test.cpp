#include "kv/kv_dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "util/fp16.h"

namespace pagoda {
namespace {

std::vector<float> random_values(int n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<float> round_trip(KvDtype t, const std::vector<float>& x) {
  std::vector<uint8_t> stored(kv_bytes(t, static_cast<int64_t>(x.size())));
  kv_store_row(t, x.data(), static_cast<int64_t>(x.size()), stored.data());
  std::vector<float> back(x.size());
  kv_load_row(t, stored.data(), static_cast<int64_t>(x.size()), back.data());
  return back;
}

}  // namespace

TEST(KvDtype, NamesParseAndRejectOthers) {
  for (KvDtype t : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0}) {
    auto parsed = parse_kv_dtype(kv_dtype_name(t));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(*parse_kv_dtype("Q8_0"), KvDtype::kQ8_0);
  auto bad = parse_kv_dtype("q4_0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'q4_0'"), std::string::npos) << bad.error().message;
  EXPECT_EQ(kDefaultKvDtype, KvDtype::kF16);
}

TEST(KvDtype, ByteSizes) {
  EXPECT_EQ(kv_bytes(KvDtype::kF32, 64), 256);
  EXPECT_EQ(kv_bytes(KvDtype::kF16, 64), 128);
  EXPECT_EQ(kv_bytes(KvDtype::kBF16, 64), 128);
  EXPECT_EQ(kv_bytes(KvDtype::kQ8_0, 64), 68);
  EXPECT_TRUE(check_kv_head_dim(KvDtype::kQ8_0, 64).ok());
  EXPECT_FALSE(check_kv_head_dim(KvDtype::kQ8_0, 40).ok());
  EXPECT_TRUE(check_kv_head_dim(KvDtype::kF16, 40).ok());
}

TEST(KvDtype, F32IsExactAndHalfTypesRoundToNearestEven) {
  const auto x = random_values(256, 1, 3.0f);
  EXPECT_EQ(round_trip(KvDtype::kF32, x), x);
  const auto h = round_trip(KvDtype::kF16, x), b = round_trip(KvDtype::kBF16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], f16_to_f32(f32_to_f16(x[i])));
    EXPECT_EQ(b[i], bf16_to_f32(f32_to_bf16(x[i])));
    EXPECT_LE(std::fabs(h[i] - x[i]), std::ldexp(std::fabs(x[i]), -11) + 1e-7f);  // half an f16 ulp
    EXPECT_LE(std::fabs(b[i] - x[i]), std::ldexp(std::fabs(x[i]), -8));          // half a bf16 ulp
  }
  // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 in f16.
  EXPECT_EQ(round_trip(KvDtype::kF16, {1.0f + std::ldexp(1.0f, -11)})[0], 1.0f);
  EXPECT_EQ(round_trip(KvDtype::kF16, {1.0f + 3 * std::ldexp(1.0f, -11)})[0], 1.0f + std::ldexp(1.0f, -9));
}

TEST(KvDtype, Q8_0QuantizesPerBlockOf32WithinHalfAStep) {
  auto x = random_values(128, 2, 1.0f);
  for (int i = 32; i < 64; ++i) x[i] *= 100.0f;  // blocks have their own scales
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;     // an all-zero block stays zero
  const auto back = round_trip(KvDtype::kQ8_0, x);
  for (int blk = 0; blk < 4; ++blk) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    const float step = f16_to_f32(f32_to_f16(amax / 127.0f));
    for (int j = 0; j < 32; ++j) {
      const int i = blk * 32 + j;
      EXPECT_LE(std::fabs(back[i] - x[i]), 0.57f * step + 1e-6f) << i;  // half a step, plus the f16 rounding of d
      // Every stored value is an integer multiple of the block's scale.
      if (step > 0) {
        EXPECT_EQ(back[i] / step, std::round(back[i] / step)) << i;
      }
    }
  }
  for (int i = 64; i < 96; ++i) EXPECT_EQ(back[i], 0.0f);
  // Storing twice gives the same bytes (nothing depends on state).
  std::vector<uint8_t> a(kv_bytes(KvDtype::kQ8_0, 128)), b(a.size());
  kv_store_row(KvDtype::kQ8_0, x.data(), 128, a.data());
  kv_store_row(KvDtype::kQ8_0, x.data(), 128, b.data());
  EXPECT_EQ(a, b);
}

}  // namespace pagoda
