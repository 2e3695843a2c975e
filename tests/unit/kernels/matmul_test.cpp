#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/isa_skip.h"
#include "util/fp16.h"
#include "util/rng.h"

namespace pagoda {
namespace {

// A random weight matrix in `type`, and its exact f32 dequantization.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  std::vector<float> dequant;  // [rows, cols]
  WeightMatrix w;
};

TestMatrix make_matrix(GgmlType type, int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  TestMatrix m;
  const auto& traits = ggml_type_traits(type);
  const size_t row_bytes = ggml_row_bytes(traits, cols);
  m.bytes.resize(row_bytes * rows);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = m.bytes.data() + r * row_bytes;
    for (int64_t k = 0; k < cols; ++k) {
      const float v = static_cast<float>(rng.next_double() * 2 - 1);
      if (type == GgmlType::F32) std::memcpy(row + 4 * k, &v, 4);
      if (type == GgmlType::F16) reinterpret_cast<uint16_t*>(row)[k] = f32_to_f16(v);
      if (type == GgmlType::BF16) reinterpret_cast<uint16_t*>(row)[k] = f32_to_bf16(v);
    }
  }
  m.w = WeightMatrix{m.bytes.data(), type, cols, rows, row_bytes};
  m.dequant.resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(m.w, r, m.dequant.data() + r * cols);
  return m;
}

std::vector<float> random_float_activations(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (auto& v : x) v = static_cast<float>(rng.next_double() * 2 - 1);
  return x;
}

// The float weight types (quantized ones: quant_dot_test.cpp). Parameters: weight type and the kernel ISA to force (skipped where the CPU lacks it).
class MatmulTest : public ::testing::TestWithParam<std::tuple<GgmlType, const char*>> {
 protected:
  void SetUp() override {
    previous_ = matmul_isa_name();
    if (!isa_runs_or_skip(std::get<1>(GetParam()))) GTEST_SKIP() << "CPU lacks " << std::get<1>(GetParam());
    ASSERT_TRUE(kernels::force_matmul_isa(std::get<1>(GetParam())));
  }
  void TearDown() override { kernels::force_matmul_isa(previous_); }
  GgmlType type() const { return std::get<0>(GetParam()); }

 private:
  const char* previous_ = "portable";
};

TEST_P(MatmulTest, MatchesDoublePrecisionReference) {
  const GgmlType type = this->type();
  for (int64_t cols : {32, 64, 96, 100, 800}) {
    for (int64_t rows : {1, 3, 4, 13}) {
      if (cols % ggml_type_traits(type).block_elems) continue;
      auto m = make_matrix(type, rows, cols, 7 + rows);
      const int64_t T = 6;
      auto x = random_float_activations(T * cols, 99);
      std::vector<float> y(T * rows);
      ThreadPool pool(2);
      matmul(m.w, x.data(), T, y.data(), pool);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < rows; ++r) {
          double ref = 0;
          for (int64_t k = 0; k < cols; ++k) ref += static_cast<double>(x[t * cols + k]) * m.dequant[r * cols + k];
          EXPECT_NEAR(y[t * rows + r], ref, 1e-5 * cols) << "cols " << cols << " rows " << rows;
        }
    }
  }
}

TEST_P(MatmulTest, IsBatchAndThreadInvariant) {
  // A token's outputs must be bitwise identical alone, inside any batch, and with any thread count.
  const GgmlType type = this->type();
  const int64_t rows = 37, cols = 164, T = 11;
  auto m = make_matrix(type, rows, cols, 3);
  auto x = random_float_activations(T * cols, 5);
  std::vector<float> batched(T * rows);
  ThreadPool pool3(3);
  matmul(m.w, x.data(), T, batched.data(), pool3);
  ThreadPool pool1(1);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> alone(rows);
    matmul(m.w, x.data() + t * cols, 1, alone.data(), pool1);
    EXPECT_EQ(0, std::memcmp(alone.data(), batched.data() + t * rows, sizeof(float) * rows)) << "token " << t;
  }
  // A batch starting at another offset (different tile grouping) gives the same bits too.
  std::vector<float> shifted((T - 2) * rows);
  matmul(m.w, x.data() + 2 * cols, T - 2, shifted.data(), pool1);
  EXPECT_EQ(0, std::memcmp(shifted.data(), batched.data() + 2 * rows, sizeof(float) * shifted.size()));
}

TEST_P(MatmulTest, PrefillSizedBatchesGiveEachTokenItsBits) {
  // Batches of kSmallBatch tokens and more run the prefill tiles: still each token's bits alone. 70 tokens cross a
  // 64-token chunk; 164 columns leave a partial step; 3,100 columns make the chunks shorter (long rows).
  const GgmlType type = this->type();
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{29, 164}, {7, 3100}}) {
    auto m = make_matrix(type, rows, cols, 7 + cols);
    for (int64_t T : {48, 70}) {
      auto x = random_float_activations(T * cols, 8 + T);
      std::vector<float> batched(T * rows);
      ThreadPool pool2(2), pool1(1);
      matmul(m.w, x.data(), T, batched.data(), pool2);
      for (int64_t t = 0; t < T; ++t) {
        std::vector<float> alone(rows);
        matmul(m.w, x.data() + t * cols, 1, alone.data(), pool1);
        ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + t * rows, sizeof(float) * rows))
            << cols << " columns, " << T << " tokens: token " << t;
      }
    }
  }
}

TEST_P(MatmulTest, ScalarKernelAgreesWithDispatchedKernel) {
  const GgmlType type = this->type();
  const int64_t rows = 9, cols = 224, T = 5;
  auto m = make_matrix(type, rows, cols, 11);
  auto x = random_float_activations(T * cols, 12);
  std::vector<float> fast(T * rows), scalar(T * rows);
  ThreadPool pool(2);
  matmul(m.w, x.data(), T, fast.data(), pool);
  kernels::matmul_rows_scalar(m.w, x.data(), T, scalar.data(), 0, rows);
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_NEAR(fast[i], scalar[i], 1e-4);
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndIsas, MatmulTest,
                         ::testing::Combine(::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16),
                                            ::testing::Values("avx512", "avx2", "scalar")),
                         [](const auto& info) {
                           return std::string(ggml_type_traits(std::get<0>(info.param)).name) + "_" +
                                  std::get<1>(info.param);
                         });

TEST(MatmulDispatch, PicksTheWidestIsaAndKnowsTheOthers) {
  const std::string picked = matmul_isa_name();
  EXPECT_TRUE(picked == "avx512" || picked == "avx2" || picked == "portable") << picked;
  EXPECT_TRUE(kernels::force_matmul_isa("scalar"));
  EXPECT_STREQ(matmul_isa_name(), "portable");
  EXPECT_FALSE(kernels::force_matmul_isa("sse9"));
  EXPECT_TRUE(kernels::force_matmul_isa(picked.c_str()));
}

}  // namespace
}  // namespace pagoda
