// The integer dot products on quantized weights: the portable code against the dequantized reference, every SIMD
// build bitwise equal to the portable one (random blocks, including the extreme byte values), and the quantized
// matmul independent of the batch and the thread count.
#include "kernels/cpu/quant_dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/quant_blocks.h"
#include "kernels/cpu/dequantize.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_dot_combine.h"
#include "kernels/isa_skip.h"
#include "util/fp16.h"
#include "util/rng.h"

namespace pagoda {
namespace {

const GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                           GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS};

// Byte offsets of the f16 fields (scales, mins) in one block of each type; everything else is random bits.
std::vector<int> f16_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q6_K: return {208};
    default: return {0};
  }
}

// rows x cols weights of type t: random bytes with finite scales of about `scale`.
std::vector<uint8_t> random_quant_rows(GgmlType t, int64_t rows, int64_t cols, uint64_t seed, float scale = 0.01f) {
  const auto& traits = ggml_type_traits(t);
  std::vector<uint8_t> bytes(rows * ggml_row_bytes(traits, cols));
  Rng rng(seed);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.next_u64());
  for (size_t block = 0; block < bytes.size() / traits.block_bytes; ++block)
    for (int off : f16_fields(t)) {
      const uint16_t h = f32_to_f16(static_cast<float>(scale * (0.5 + rng.next_double())));
      std::memcpy(&bytes[block * traits.block_bytes + off], &h, 2);
    }
  return bytes;
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.next_double() * 2 - 1);
  return v;
}

class QuantDot : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantDot, PortableEqualsTheDequantizedDotOfTheQuantizedActivations) {
  const GgmlType t = GetParam();
  const int64_t K = 512;
  const auto w = random_quant_rows(t, 1, K, 1);
  const auto x = random_floats(K, 2);
  const ActivationFormat f = activation_format(t);
  std::vector<uint8_t> xq(activation_row_bytes(f, K));
  quantize_activations(f, x.data(), K, xq.data());
  std::vector<float> wf(K);
  dequantize(t, w.data(), K, wf.data());
  // The activations as their quantized values: Q8_1's quants are Q8_0's with a sum; Q8_K has a float scale.
  std::vector<float> xf(K);
  if (f == ActivationFormat::kQ8_K) {
    const auto* b = reinterpret_cast<const BlockQ8_K*>(xq.data());
    for (int64_t k = 0; k < K; ++k) xf[k] = b[k / kQK_K].d * b[k / kQK_K].qs[k % kQK_K];
  } else {
    const size_t bytes = f == ActivationFormat::kQ8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t* b = xq.data() + (k / kQK) * bytes;
      uint16_t d;
      std::memcpy(&d, b, 2);
      xf[k] = f16_to_f32(d) * reinterpret_cast<const int8_t*>(b + bytes - kQK)[k % kQK];
    }
  }
  double exact = 0, plain = 0, magnitude = 0;
  for (int64_t k = 0; k < K; ++k) {
    exact += static_cast<double>(wf[k]) * xf[k];
    plain += static_cast<double>(wf[k]) * x[k];
    magnitude += std::fabs(static_cast<double>(wf[k]) * x[k]);
  }
  const float got = quant_dot_portable(t)(w.data(), xq.data(), K);
  // Q4_1 / Q5_1 use the activations' f16 sum for the mins, so they differ from the exact sum by its rounding.
  const double rounding = (t == GgmlType::Q4_1 || t == GgmlType::Q5_1) ? 2e-3 : 1e-4;
  EXPECT_NEAR(got, exact, rounding * magnitude + 1e-5) << ggml_type_traits(t).name;
  // Against unquantized activations: within the activations' quantization error (about 1/254 per element).
  EXPECT_NEAR(got, plain, 0.01 * magnitude) << ggml_type_traits(t).name;
}

// Row lengths with an even and an odd number of blocks (the even and odd blocks feed different lanes, and 512-bit
// builds take blocks in pairs: an odd count leaves a lone last block).
std::vector<int64_t> quant_row_lengths(GgmlType t) {
  if (ggml_type_traits(t).block_elems == 256) return {1024, 768, 256};
  return {1024, 800, 32};
}

TEST_P(QuantDot, EverySimdBuildGivesThePortableBits) {
  const GgmlType t = GetParam();
  int compared = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    const int64_t K = quant_row_lengths(t)[seed % 3];
    const auto w = random_quant_rows(t, 1, K, 100 + seed, seed % 2 ? 1.0f : 1e-3f);
    auto x = random_floats(K, 200 + seed);
    if (seed == 3) x.assign(K, 0.0f);  // an all-zero activation row (scale 0)
    const ActivationFormat f = activation_format(t);
    std::vector<uint8_t> xq(activation_row_bytes(f, K));
    quantize_activations(f, x.data(), K, xq.data());
    const float want = quant_dot_portable(t)(w.data(), xq.data(), K);
    for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
      if (!isa_runs_or_skip(isa)) continue;
      const float got = quant_dot(t, isa)(w.data(), xq.data(), K);
      uint32_t a, b;
      std::memcpy(&a, &got, 4);
      std::memcpy(&b, &want, 4);
      EXPECT_EQ(a, b) << ggml_type_traits(t).name << " " << kernel_isa_name(isa) << " seed " << seed;
      ++compared;
    }
  }
  RecordProperty("simd_builds_compared", compared);
}

TEST_P(QuantDot, TilesGiveThePortableBitsOfEveryPair) {
  const GgmlType t = GetParam();
  for (int64_t K : quant_row_lengths(t)) {
    const auto w = random_quant_rows(t, 8, K, 31 + K);
    const size_t w_stride = ggml_row_bytes(ggml_type_traits(t), K);
    const ActivationFormat f = activation_format(t);
    const size_t x_stride = activation_row_bytes(f, K);
    const auto x = random_floats(8 * K, 32);
    std::vector<uint8_t> xq(8 * x_stride);
    for (int tok = 0; tok < 8; ++tok) quantize_activations(f, x.data() + tok * K, K, xq.data() + tok * x_stride);
    int tiles = 0;
    for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
      if (!isa_runs_or_skip(isa, /*with_vnni=*/true)) continue;
      const QuantKernels k = isa == KernelIsa::kAvx2 ? quant_kernels_avx2(t) : quant_kernels_avx512(t);
      if (!k.tile) continue;
      ++tiles;
      std::vector<float> y(k.tile_tokens * k.tile_rows);
      k.tile(w.data(), w_stride, xq.data(), x_stride, K, y.data(), k.tile_rows);
      for (int tok = 0; tok < k.tile_tokens; ++tok)
        for (int r = 0; r < k.tile_rows; ++r) {
          const float want = quant_dot_portable(t)(w.data() + r * w_stride, xq.data() + tok * x_stride, K);
          EXPECT_EQ(0, std::memcmp(&want, &y[tok * k.tile_rows + r], 4))
              << ggml_type_traits(t).name << " " << kernel_isa_name(isa) << " K " << K << " row " << r << " token "
              << tok;
        }
    }
    RecordProperty("tile_builds_compared_K" + std::to_string(K), tiles);
  }
}

// Decode's prepared activation rows (where a build has them) give the single dot's bits, for even and odd block counts.
TEST_P(QuantDot, PreparedDotsGiveThePortableBits) {
  const GgmlType t = GetParam();
  int compared = 0;
  for (KernelIsa isa : {KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!isa_runs_or_skip(isa)) continue;
    const QuantKernels k = quant_kernels(t, isa);
    if (!k.dot_prepared) continue;
    for (int64_t K : quant_row_lengths(t)) {
      const auto w = random_quant_rows(t, 5, K, 80 + K);
      const size_t w_stride = ggml_row_bytes(ggml_type_traits(t), K);
      const auto x = random_floats(K, 81 + K);
      std::vector<uint8_t> xq(activation_row_bytes(activation_format(t), K));
      k.quantize(x.data(), K, xq.data());
      std::vector<uint8_t> storage(k.prepared_bytes(K) + 64);
      uint8_t* prepared = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
      k.prepare(xq.data(), K, prepared);
      for (int r = 0; r < 5; ++r) {
        const float want = quant_dot_portable(t)(w.data() + r * w_stride, xq.data(), K);
        const float got = k.dot_prepared(w.data() + r * w_stride, prepared, K);
        EXPECT_EQ(0, std::memcmp(&want, &got, 4)) << kernel_isa_name(isa) << " K " << K << " row " << r;
        ++compared;
      }
    }
  }
  RecordProperty("prepared_dots_compared", compared);
}

TEST_P(QuantDot, MatmulIsBatchAndThreadInvariant) {
  const GgmlType t = GetParam();
  const int64_t K = quant_row_lengths(t)[1], N = 50, T = 7;
  auto bytes = random_quant_rows(t, N, K, 7);
  WeightMatrix w{bytes.data(), t, K, N, ggml_row_bytes(ggml_type_traits(t), K)};
  const auto x = random_floats(T * K, 8);
  ThreadPool one(1), three(3);
  std::vector<float> batched(T * N), alone(N);
  matmul(w, x.data(), T, batched.data(), three);
  for (int64_t tok = 0; tok < T; ++tok) {
    matmul(w, x.data() + tok * K, 1, alone.data(), one);
    EXPECT_EQ(0, std::memcmp(alone.data(), batched.data() + tok * N, N * 4)) << "token " << tok;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantDot, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(ggml_type_traits(info.param).name); });

// matmul_many (one quantization and one parallel region for several matrices) gives each matrix's matmul bits:
// types sharing a format (Q4_K and Q6_K on Q8_K), different row counts, decode and prefill token counts; and the
// fallback for a mix it cannot share (F32 beside Q8_0).
TEST(QuantDot, MatmulManyEqualsSeparateMatmuls) {
  const int64_t K = 512;
  const std::pair<GgmlType, int64_t> mats[3] = {{GgmlType::Q4_K, 50}, {GgmlType::Q6_K, 24}, {GgmlType::Q4_K, 73}};
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<WeightMatrix> w;
  for (int i = 0; i < 3; ++i) bytes.push_back(random_quant_rows(mats[i].first, mats[i].second, K, 60 + i));
  for (int i = 0; i < 3; ++i)
    w.push_back({bytes[i].data(), mats[i].first, K, mats[i].second, ggml_row_bytes(ggml_type_traits(mats[i].first), K)});
  std::vector<float> f32_rows(20 * K);
  for (size_t i = 0; i < f32_rows.size(); ++i) f32_rows[i] = static_cast<float>(std::sin(0.37 * i));
  const WeightMatrix dense{reinterpret_cast<const uint8_t*>(f32_rows.data()), GgmlType::F32, K, 20, K * 4};
  ThreadPool pool(3);
  for (int64_t T : {1, 2, 9}) {
    const auto x = random_floats(T * K, 70 + T);
    for (int variant = 0; variant < 3; ++variant) {
      // 0: three quantized; 1: quantized and float mixed (separate calls); 2: float only (one shared region).
      const WeightMatrix* ws[3] = {variant == 2 ? &dense : &w[0], variant == 2 ? &dense : &w[1],
                                   variant == 0 ? &w[2] : &dense};
      std::vector<std::vector<float>> want(3), got(3);
      float* outs[3];
      for (int i = 0; i < 3; ++i) {
        want[i].resize(T * ws[i]->rows);
        got[i].assign(T * ws[i]->rows, NAN);
        matmul(*ws[i], x.data(), T, want[i].data(), pool);
        outs[i] = got[i].data();
      }
      matmul_many(ws, outs, 3, x.data(), T, pool);
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(0, std::memcmp(want[i].data(), got[i].data(), want[i].size() * 4))
            << "T " << T << " matrix " << i << " variant " << variant;
    }
  }
}

// Each SIMD build has a dot for every type; a build this CPU cannot run is skipped (even returning a pointer runs
// that build's code, whose prologue may use its instructions).
TEST(QuantDot, Avx2BuildCoversEveryType) {
  if (!isa_runs_or_skip(KernelIsa::kAvx2)) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  for (GgmlType t : kTypes) EXPECT_NE(quant_dot_avx2(t), nullptr) << ggml_type_traits(t).name;
}
TEST(QuantDot, Avx512BuildCoversEveryType) {
  if (!isa_runs_or_skip(KernelIsa::kAvx512, /*with_vnni=*/true)) GTEST_SKIP() << "this CPU lacks AVX-512 (F/BW/VL/DQ, VNNI)";
  for (GgmlType t : kTypes) EXPECT_NE(quant_dot_avx512(t), nullptr) << ggml_type_traits(t).name;
}

TEST(QuantDot, WordWiseK4ScalesEqualTheByteWiseUnpacking) {
  Rng rng(5);
  for (int i = 0; i < 1000; ++i) {
    uint8_t packed[12];
    for (auto& b : packed) b = static_cast<uint8_t>(rng.next_u64());
    uint8_t sc[8], m[8];
    quant_combine::k4_scales(packed, sc, m);
    for (int j = 0; j < 8; ++j) {
      uint8_t want_sc, want_m;
      unpack_k4_scale_min(packed, j, &want_sc, &want_m);
      ASSERT_EQ(sc[j], want_sc) << j;
      ASSERT_EQ(m[j], want_m) << j;
    }
  }
}

TEST(QuantDot, NonFiniteActivationsQuantizeToBoundedLevels) {
  // An overflowing layer must not make the float-to-int conversion undefined: levels stay within [-127, 127].
  std::vector<float> x(256, 0.5f);
  x[3] = INFINITY;
  x[40] = NAN;
  x[41] = -INFINITY;
  for (ActivationFormat f : {ActivationFormat::kQ8_0, ActivationFormat::kQ8_1, ActivationFormat::kQ8_K}) {
    std::vector<uint8_t> xq(activation_row_bytes(f, 256));
    quantize_activations(f, x.data(), 256, xq.data());
    const size_t block = f == ActivationFormat::kQ8_K ? sizeof(BlockQ8_K) : f == ActivationFormat::kQ8_0 ? 34 : 36;
    const size_t offset = f == ActivationFormat::kQ8_K ? 4 : f == ActivationFormat::kQ8_0 ? 2 : 4;
    const int per_block = f == ActivationFormat::kQ8_K ? 256 : 32;
    for (int k = 0; k < 256; ++k) {
      const int8_t q = static_cast<int8_t>(xq[(k / per_block) * block + offset + k % per_block]);
      EXPECT_GE(q, -127) << k;
    }
  }
}

// The SIMD activation quantizers write the portable quantizer's bytes (levels, scales, lane sums, bsums): random
// rows, an all-zero block, a block whose largest magnitude appears with both signs (the first one sets d's sign),
// values that round at exactly .5, and non-finite values.
TEST(QuantDot, SimdActivationQuantizersGiveThePortableBytes) {
  constexpr int64_t K = 1024;
  std::vector<std::vector<float>> rows;
  for (uint64_t seed = 1; seed <= 4; ++seed) rows.push_back(random_floats(K, 40 + seed));
  rows.push_back(std::vector<float>(K, 0.0f));
  std::vector<float> special = random_floats(K, 9);
  for (int i = 0; i < 32; ++i) special[i] = 0.0f;  // a zero block
  special[300] = -2.0f, special[301] = 2.0f, special[290] = 2.0f;  // equal magnitudes of both signs
  for (int i = 512; i < 544; ++i) special[i] = (i - 528) * 0.5f + (i % 3 == 0 ? 0.25f : 0.0f);  // exact halves
  rows.push_back(special);
  std::vector<float> bad = random_floats(K, 10);
  bad[3] = INFINITY, bad[40] = NAN, bad[300] = -INFINITY, bad[700] = NAN;
  rows.push_back(bad);
  // Scales and sums at the ends of f16: blocks whose d or s is an f16 subnormal or zero, or overflows to infinity.
  std::vector<float> extreme = random_floats(K, 11);
  const float block_scale[8] = {1e-9f, 1e-7f, 3e-6f, 1e-5f, 6e4f, 1e7f, 1.0f, 2e3f};
  for (int i = 0; i < K; ++i) extreme[i] *= block_scale[(i / 32) % 8];
  rows.push_back(extreme);
  int compared = 0;
  for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K}) {
    const ActivationFormat f = activation_format(t);
    for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
      if (!isa_runs_or_skip(isa)) continue;
      const QuantKernels k = quant_kernels(t, isa);
      ASSERT_NE(k.quantize, nullptr);
      // Whole rows, and rows of 18 blocks of 32 (the Q8_1 quantizer runs 8 blocks at a time, then the rest).
      for (int64_t n : {K, int64_t{576}})
        for (size_t i = 0; i < rows.size(); ++i) {
          if (n % ggml_type_traits(t).block_elems != 0) continue;
          std::vector<uint8_t> want(activation_row_bytes(f, n), 0xAB), got(want.size(), 0xCD);
          quantize_activations(f, rows[i].data(), n, want.data());
          k.quantize(rows[i].data(), n, got.data());
          ASSERT_EQ(want, got) << ggml_type_traits(t).name << " " << kernel_isa_name(isa) << " row " << i << " of "
                               << n;
          ++compared;
        }
    }
  }
  EXPECT_GE(compared, 21);
}

TEST(QuantDot, EveryRunnableQuantizedTypeUsesTheIntegerPath) {
  for (GgmlType t : kTypes) EXPECT_TRUE(uses_integer_dot(t)) << ggml_type_traits(t).name;
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) EXPECT_FALSE(uses_integer_dot(t));
}

}  // namespace
}  // namespace pagoda
