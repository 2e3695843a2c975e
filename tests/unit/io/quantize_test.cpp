// Weight quantization for `pagoda synth`: each type round-trips through its reference dequantization with the
// error its bits allow, the 32-element types reproduce ggml's reference formulas on hand-checked blocks, and
// shapes or types it cannot write are refused with a message.
#include "io/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "io/quant_blocks.h"
#include "kernels/cpu/dequantize.h"
#include "util/fp16.h"
#include "util/rng.h"

namespace pagoda {
namespace {

std::vector<float> gaussian_like(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>((rng.next_double() + rng.next_double() + rng.next_double() - 1.5) * 0.05);
  return v;
}

struct RoundTrip {
  GgmlType type;
  double max_relative_rms;  // RMS error / RMS value
};

class QuantizeRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(QuantizeRoundTrip, DequantizedValuesAreCloseToTheInput) {
  const auto [type, bound] = GetParam();
  const int64_t n = 4096;
  const auto x = gaussian_like(n, 3);
  auto bytes = quantize_values(type, x.data(), n);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  ASSERT_EQ(bytes->size(), ggml_row_bytes(ggml_type_traits(type), n));
  std::vector<float> y(n);
  dequantize(type, bytes->data(), n, y.data());
  double err = 0, ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += (y[i] - x[i]) * (y[i] - x[i]);
    ref += x[i] * x[i];
  }
  const double relative = std::sqrt(err / ref);
  EXPECT_LT(relative, bound) << ggml_type_traits(type).name;
  EXPECT_GT(relative, bound / 20) << ggml_type_traits(type).name << ": suspiciously exact";
  RecordProperty("relative_rms_error", std::to_string(relative));
}

// Bounds: about 1.5x what these quantizers measured on these values (0.005, 0.080, 0.076, 0.039, 0.036, 0.076,
// 0.018 in this order).
INSTANTIATE_TEST_SUITE_P(Types, QuantizeRoundTrip,
                         ::testing::Values(RoundTrip{GgmlType::Q8_0, 0.0075}, RoundTrip{GgmlType::Q4_0, 0.12},
                                           RoundTrip{GgmlType::Q4_1, 0.11}, RoundTrip{GgmlType::Q5_0, 0.06},
                                           RoundTrip{GgmlType::Q5_1, 0.055}, RoundTrip{GgmlType::Q4_K, 0.11},
                                           RoundTrip{GgmlType::Q6_K, 0.03}),
                         [](const auto& info) { return std::string(ggml_type_traits(info.param.type).name); });

TEST(Quantize, Q4_0FollowsTheReferenceFormula) {
  // A block whose value of largest magnitude is -1.6: d = -1.6 / -8 = 0.2, q = round(x / d) + 8 clamped to 15.
  std::vector<float> x(32, 0.0f);
  x[0] = -1.6f;
  x[1] = 1.6f;   // 8 + 8 = 16 -> clamped to 15
  x[17] = 0.3f;  // 1.5 + 8.5 -> 10 (truncation of 10.0)
  auto bytes = quantize_values(GgmlType::Q4_0, x.data(), 32);
  ASSERT_TRUE(bytes.ok());
  const auto& b = *reinterpret_cast<const BlockQ4_0*>(bytes->data());
  EXPECT_FLOAT_EQ(f16_to_f32(b.d), f16_to_f32(f32_to_f16(0.2f)));
  EXPECT_EQ(b.qs[0] & 0xF, 0);   // -1.6 -> 0
  EXPECT_EQ(b.qs[1] & 0xF, 15);  // 1.6 -> clamped
  EXPECT_EQ(b.qs[1] >> 4, 10);   // x[17]
  EXPECT_EQ(b.qs[2] & 0xF, 8);   // 0 -> 8
}

TEST(Quantize, RefusesTypesAndShapesItCannotWrite) {
  std::vector<float> x(64, 0.5f);
  auto iq = quantize_values(GgmlType::IQ4_XS, x.data(), 256);
  ASSERT_FALSE(iq.ok());
  EXPECT_NE(iq.error().message.find("IQ4_XS"), std::string::npos);
  auto partial = quantize_values(GgmlType::Q4_K, x.data(), 64);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message.find("Q4_K blocks"), std::string::npos) << partial.error().message;
  auto zeros = quantize_values(GgmlType::Q4_K, std::vector<float>(256, 0.0f).data(), 256);
  ASSERT_TRUE(zeros.ok());  // an all-zero super-block: scales 0, no division by zero
  std::vector<float> y(256, 1.0f);
  dequantize(GgmlType::Q4_K, zeros->data(), 256, y.data());
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace pagoda
