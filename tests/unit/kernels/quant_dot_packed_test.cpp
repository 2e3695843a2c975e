// Packed Q8_0 / Q4_0 / IQ4_NL weights (quant_dot_packed.h): the documented layout, every build's packed kernel
// bitwise the portable row-major dot for any number of rows and tokens, and matmul on a packed matrix bitwise the
// row-major matmul for any batch and thread count.
#include "kernels/cpu/quant_dot_packed.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "io/quant_blocks.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/isa_skip.h"
#include "util/fp16.h"
#include "util/rng.h"
#include "util/thread_pool.h"

namespace pagoda {
namespace {

const GgmlType kPackedTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                 GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                 GgmlType::Q6_K, GgmlType::IQ4_XS};

size_t row_bytes(GgmlType t, int64_t cols) { return ggml_row_bytes(ggml_type_traits(t), cols); }

// rows x cols of random bytes (every level value, Q8_0's -128 included) with finite f16 scales around `scale`.
std::vector<uint8_t> random_rows(GgmlType t, int64_t rows, int64_t cols, uint64_t seed, float scale) {
  const size_t block = ggml_type_traits(t).block_bytes;
  std::vector<uint8_t> bytes(rows * row_bytes(t, cols));
  Rng rng(seed);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.next_u64());
  // The f16 fields: d (and Q4_K's / Q5_K's dmin, Q4_1's / Q5_1's m) lead every block but Q6_K's, Q3_K's and
  // Q2_K's, whose d (and dmin) end it.
  const std::vector<size_t> f16_at = t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q4_1 ||
                                             t == GgmlType::Q5_1
                                         ? std::vector<size_t>{0, 2}
                                     : t == GgmlType::Q6_K ? std::vector<size_t>{208}
                                     : t == GgmlType::Q2_K ? std::vector<size_t>{80, 82}
                                     : t == GgmlType::Q3_K ? std::vector<size_t>{108}
                                                           : std::vector<size_t>{0};
  for (size_t i = 0; i < bytes.size() / block; ++i)
    for (size_t at : f16_at) {
      const uint16_t h = f32_to_f16(static_cast<float>(scale * (0.5 + rng.next_double())));
      std::memcpy(&bytes[i * block + at], &h, 2);
    }
  return bytes;
}

// n rows of K activations quantized for type t; row 2 is all zeros (scale 0).
std::vector<uint8_t> random_activations(GgmlType t, int64_t n, int64_t K, uint64_t seed) {
  const ActivationFormat f = activation_format(t);
  const size_t stride = activation_row_bytes(f, K);
  std::vector<uint8_t> xq(n * stride);
  Rng rng(seed);
  std::vector<float> x(K);
  for (int64_t i = 0; i < n; ++i) {
    for (auto& v : x) v = i == 2 ? 0.0f : static_cast<float>(rng.next_double() * 2 - 1);
    quantize_activations(f, x.data(), K, xq.data() + i * stride);
  }
  return xq;
}

std::vector<int64_t> row_lengths(GgmlType t) {
  if (ggml_type_traits(t).block_elems == 256) return {256, 768, 1280};
  return {32, 96, 800};
}

// The documented record offset of byte o of row r's block (quant_dot_packed.h), written out per type.
size_t documented_offset(GgmlType t, int r, int o) {
  if (t == GgmlType::Q4_K) {
    if (o < 2) return 2 * r + o;                            // d[16]
    if (o < 4) return 32 + 2 * r + (o - 2);                 // dmin[16]
    if (o < 16) return 64 + 16 * (o - 4) + r;               // scales[12][16]
    const int j = o - 16;                                   // qs[32][16][4]
    return 256 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::Q5_K) {
    if (o < 2) return 2 * r + o;                            // d[16]
    if (o < 4) return 32 + 2 * r + (o - 2);                 // dmin[16]
    if (o < 16) return 64 + 16 * (o - 4) + r;               // scales[12][16]
    if (o < 48) return 256 + 64 * ((o - 16) / 4) + 4 * r + (o - 16) % 4;  // qh[8][16][4]
    const int j = o - 48;                                   // qs[32][16][4]
    return 768 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::IQ4_XS) {
    if (o < 2) return 2 * r + o;                            // d[16]
    if (o < 4) return 32 + 2 * r + (o - 2);                 // scales_h[16]
    if (o < 8) return 64 + 16 * (o - 4) + r;                // scales_l[4][16]
    const int j = o - 8;                                    // qs[32][16][4]
    return 128 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::Q6_K) {
    if (o >= 208) return 2 * r + (o - 208);                 // d[16]
    if (o >= 192) return 32 + 16 * (o - 192) + r;           // scales[16][16]
    if (o < 128) return 288 + 64 * (o / 4) + 4 * r + o % 4; // ql[32][16][4]
    const int j = o - 128;                                  // qh[16][16][4]
    return 288 + 2048 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::Q2_K) {
    if (o >= 82) return 32 + 2 * r + (o - 82);              // dmin[16]
    if (o >= 80) return 2 * r + (o - 80);                   // d[16]
    if (o < 16) return 64 + 16 * o + r;                     // scales[16][16]
    const int j = o - 16;                                   // qs[16][16][4]
    return 320 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::Q3_K) {
    if (o >= 108) return 2 * r + (o - 108);                 // d[16]
    if (o < 32) return 32 + 64 * (o / 4) + 4 * r + o % 4;   // hmask[8][16][4]
    if (o < 96) return 544 + 64 * ((o - 32) / 4) + 4 * r + (o - 32) % 4;  // qs[16][16][4]
    return 1568 + 16 * (o - 96) + r;                        // scales[12][16]
  }
  if (t == GgmlType::Q4_1) {
    if (o < 2) return 2 * r + o;                            // d[16]
    if (o < 4) return 32 + 2 * r + (o - 2);                 // m[16]
    const int j = o - 4;                                    // qs[4][16][4]
    return 64 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::Q5_0) {
    if (o < 2) return 2 * r + o;                            // d[16]
    if (o < 6) return 32 + 4 * r + (o - 2);                 // qh[1][16][4]
    const int j = o - 6;                                    // qs[4][16][4]
    return 96 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (t == GgmlType::Q5_1) {
    if (o < 2) return 2 * r + o;                            // d[16]
    if (o < 4) return 32 + 2 * r + (o - 2);                 // m[16]
    if (o < 8) return 64 + 4 * r + (o - 4);                 // qh[1][16][4]
    const int j = o - 8;                                    // qs[4][16][4]
    return 128 + 64 * (j / 4) + 4 * r + j % 4;
  }
  if (o < 2) return 2 * r + o;                              // d[16]
  const int j = o - 2;                                      // qs[C][16][4]
  return 32 + 64 * (j / 4) + 4 * r + j % 4;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct Isa {
  const char* name;
  PackedKernels k;
};
std::vector<Isa> builds(GgmlType t) {
  std::vector<Isa> out = {{"portable", packed_kernels_portable(t)}};
  if (isa_runs_or_skip(KernelIsa::kAvx2)) out.push_back({"avx2", packed_kernels_avx2(t)});
  if (isa_runs_or_skip(KernelIsa::kAvx512, /*with_vnni=*/true)) out.push_back({"avx512", packed_kernels_avx512(t)});
  return out;
}

class PackedDot : public ::testing::TestWithParam<GgmlType> {};

TEST_P(PackedDot, LayoutIsTheDocumentedOne) {
  const GgmlType t = GetParam();
  const int64_t rows = 17, K = 2 * ggml_type_traits(t).block_elems, nb = 2;
  const auto bytes = random_rows(t, rows, K, 5, 0.1f);
  const WeightMatrix w{bytes.data(), t, K, rows, row_bytes(t, K)};
  const size_t block = ggml_type_traits(t).block_bytes, record = 16 * block;
  ASSERT_EQ(packed_matrix_bytes(t, rows, K), 2 * 16 * w.row_bytes);  // the bytes of the rows, padded to 32 rows
  std::vector<uint8_t> packed(packed_matrix_bytes(t, rows, K), 0xAB);
  pack_rows(w, packed.data());
  std::vector<int> hits(record);
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t b = 0; b < nb; ++b)
      for (int r = 0; r < 16; ++r) {
        const int64_t row = 16 * g + r;
        const uint8_t* rec = packed.data() + (g * nb + b) * record;
        for (size_t o = 0; o < block; ++o) {
          const size_t at = documented_offset(t, r, static_cast<int>(o));
          ASSERT_LT(at, record);
          if (g == 0 && b == 0) ++hits[at];
          EXPECT_EQ(rec[at], row < rows ? w.row(row)[b * block + o] : 0)
              << "row " << row << " block " << b << " byte " << o;
        }
      }
  for (size_t i = 0; i < record; ++i) EXPECT_EQ(hits[i], 1) << "record byte " << i << " is not exactly one byte's place";
}

TEST_P(PackedDot, EveryBuildGivesThePortableRowMajorBits) {
  const GgmlType t = GetParam();
  int compared = 0;
  for (int64_t K : row_lengths(t))
    for (int64_t rows : {1, 16, 21, 40}) {
      const auto bytes = random_rows(t, rows, K, 10 * K + rows, rows % 2 ? 1.0f : 1e-3f);
      const WeightMatrix w{bytes.data(), t, K, rows, row_bytes(t, K)};
      std::vector<uint8_t> packed(packed_matrix_bytes(t, rows, K));
      pack_rows(w, packed.data());
      const int64_t n_tokens = 9;
      const size_t x_stride = activation_row_bytes(activation_format(t), K);
      const auto xq = random_activations(t, n_tokens, K, K + rows);
      for (const Isa& isa : builds(t)) {
        ASSERT_NE(isa.k.tile, nullptr) << isa.name;
        for (int n = 1; n <= std::min<int>(isa.k.max_tokens, n_tokens); ++n) {
          const float kSentinel = -12345.0f;
          std::vector<float> y(n * rows, kSentinel);
          for (int64_t g = 0; g * 16 < rows; ++g) {
            const int n_rows = static_cast<int>(std::min<int64_t>(16, rows - 16 * g));
            isa.k.tile(packed.data() + g * packed_group_bytes(t, K), xq.data(), x_stride, K, y.data() + 16 * g, rows, n,
                       n_rows);
          }
          for (int tok = 0; tok < n; ++tok)
            for (int64_t r = 0; r < rows; ++r) {
              const float want = quant_dot_portable(t)(w.row(r), xq.data() + tok * x_stride, K);
              ASSERT_TRUE(same_bits(want, y[tok * rows + r]))
                  << ggml_type_traits(t).name << " " << isa.name << " K " << K << " rows " << rows << " tokens " << n
                  << " row " << r << " token " << tok << ": " << y[tok * rows + r] << " vs " << want;
              ++compared;
            }
        }
      }
    }
  RecordProperty("values_compared", compared);
}

TEST_P(PackedDot, MatmulOnPackedRowsIsTheRowMajorMatmulForAnyBatchAndThreads) {
  const GgmlType t = GetParam();
  const int64_t K = 256, N = 52;  // 3 full groups and one of 4 rows
  auto bytes = random_rows(t, N, K, 77, 0.02f);
  WeightMatrix row_major{bytes.data(), t, K, N, row_bytes(t, K)};
  WeightMatrix packed = row_major;
  PackedWeights owner;
  owner.pack(packed);
  ASSERT_NE(packed.packed, nullptr);
  EXPECT_EQ(owner.bytes(), packed_matrix_bytes(t, N, K));
  ThreadPool one(1), three(3);
  for (int64_t T : {1, 5, 70}) {  // decode, a small batch, and more than one 64-token chunk
    Rng rng(T);
    std::vector<float> x(T * K);
    for (auto& v : x) v = static_cast<float>(rng.next_double() * 2 - 1);
    std::vector<float> want(T * N), got(T * N), got3(T * N);
    matmul(row_major, x.data(), T, want.data(), one);
    matmul(packed, x.data(), T, got.data(), one);
    matmul(packed, x.data(), T, got3.data(), three);
    for (int64_t i = 0; i < T * N; ++i) {
      ASSERT_TRUE(same_bits(want[i], got[i])) << "T " << T << " index " << i;
      ASSERT_TRUE(same_bits(want[i], got3[i])) << "T " << T << " index " << i << " (3 threads)";
    }
    // matmul_many with a packed and a row-major matrix sharing the activations.
    std::vector<float> a(T * N), b(T * N);
    const WeightMatrix* ws[2] = {&packed, &row_major};
    float* ys[2] = {a.data(), b.data()};
    matmul_many(ws, ys, 2, x.data(), T, three);
    for (int64_t i = 0; i < T * N; ++i) {
      ASSERT_TRUE(same_bits(want[i], a[i])) << "matmul_many packed, T " << T;
      ASSERT_TRUE(same_bits(want[i], b[i])) << "matmul_many row-major, T " << T;
    }
  }
}

// The per-thread API of the one-region forward (matmul_prepare_rows, matmul_rows, matmul_row_bytes): inputs prepared
// a share of the tokens at a time and rows computed in any split by whole granules give matmul's bits, and the bytes
// a row range reads are the packed groups (or file rows) holding it.
TEST_P(PackedDot, RowsOfOneThreadsShareAreMatmulsBits) {
  const GgmlType t = GetParam();
  const int64_t K = 256, N = 52;
  auto bytes = random_rows(t, N, K, 78, 0.02f);
  WeightMatrix row_major{bytes.data(), t, K, N, row_bytes(t, K)};
  WeightMatrix packed = row_major;
  PackedWeights owner;
  owner.pack(packed);
  ThreadPool one(1);
  for (const WeightMatrix* w : {&packed, &row_major}) {
    const int64_t g = matmul_row_granule(*w);
    EXPECT_EQ(g, w->packed ? kPackRows : 24);
    for (int64_t T : {1, 5}) {
      Rng rng(T + 10);
      std::vector<float> x(T * K);
      for (auto& v : x) v = static_cast<float>(rng.next_double() * 2 - 1);
      std::vector<float> want(T * N), got(T * N, -1.0f);
      matmul(*w, x.data(), T, want.data(), one);
      std::vector<uint8_t> xq(T * matmul_input_row_bytes(*w));
      for (int64_t t0 = 0; t0 < T; t0 += 2) matmul_prepare_rows(*w, x.data(), t0, std::min(T, t0 + 2), xq.data());
      const MatmulInput in{x.data(), xq.data(), matmul_input_row_bytes(*w), T};
      for (int64_t r = 0; r < N; r += g) matmul_rows(*w, in, got.data(), r, std::min(N, r + g));  // a granule a time
      for (int64_t i = 0; i < T * N; ++i) ASSERT_TRUE(same_bits(want[i], got[i])) << "T " << T << " index " << i;
    }
  }
  const size_t group = packed_group_bytes(t, K);
  const auto span = matmul_row_bytes(packed, 16, 40);  // groups 1 and 2
  EXPECT_EQ(span.data(), packed.packed + group);
  EXPECT_EQ(span.size(), 2 * group);
  EXPECT_EQ(matmul_row_bytes(row_major, 3, 5).data(), row_major.row(3));
  EXPECT_EQ(matmul_row_bytes(row_major, 3, 5).size(), 2 * row_major.row_bytes);
  EXPECT_TRUE(matmul_row_bytes(packed, 8, 8).empty());
}

// matmul_prepare_cols: where a prepared row is plain blocks (Q8_1, Q8_K), threads that each prepare a range of whole
// blocks, in any order, write exactly the bytes matmul_prepare_rows writes; Q8_0 rows (a trailer after the blocks)
// and float weights report 0 block columns.
TEST_P(PackedDot, ColumnRangesPreparedApartAreThePreparedRow) {
  const GgmlType t = GetParam();
  const int64_t K = 512, N = 16;
  auto bytes = random_rows(t, N, K, 79, 0.02f);
  WeightMatrix w{bytes.data(), t, K, N, row_bytes(t, K)};
  const int64_t block_cols = matmul_input_block_cols(w);
  if (activation_format(t) == ActivationFormat::kQ8_0) {
    EXPECT_EQ(block_cols, 0);
    return;
  }
  ASSERT_EQ(block_cols, activation_format(t) == ActivationFormat::kQ8_K ? 256 : 32);
  Rng rng(80);
  std::vector<float> x(K);
  for (auto& v : x) v = static_cast<float>(rng.next_double() * 2 - 1);
  x[7] = 0.0f;
  std::vector<uint8_t> want(matmul_input_row_bytes(w)), got(want.size(), 0xAB);
  matmul_prepare_rows(w, x.data(), 0, 1, want.data());
  const int64_t mid = K / 2 / block_cols * block_cols;
  matmul_prepare_cols(w, x.data(), mid, K, got.data());  // the second thread's columns first
  EXPECT_NE(want, got);
  matmul_prepare_cols(w, x.data(), 0, mid, got.data());
  matmul_prepare_cols(w, x.data(), mid, mid, got.data());  // an empty range writes nothing
  EXPECT_EQ(want, got);
}

TEST(PackedWeightsTest, FloatWeightsHaveNoPreparedBlocks) {
  std::vector<uint8_t> bytes(row_bytes(GgmlType::F16, 64) * 2);
  const WeightMatrix w{bytes.data(), GgmlType::F16, 64, 2, row_bytes(GgmlType::F16, 64)};
  EXPECT_EQ(matmul_input_block_cols(w), 0);
}

TEST(PackedWeightsTest, EveryQuantizedTypePacksAndFloatsDoNot) {
  for (GgmlType t : kPackedTypes) EXPECT_TRUE(packs_for_matmul(t));
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
    EXPECT_FALSE(packs_for_matmul(t));
    std::vector<uint8_t> bytes(row_bytes(t, 256) * 2);
    WeightMatrix w{bytes.data(), t, 256, 2, row_bytes(t, 256)};
    PackedWeights owner;
    owner.pack(w);
    EXPECT_EQ(w.packed, nullptr);
    EXPECT_EQ(owner.bytes(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedDot, ::testing::ValuesIn(kPackedTypes),
                         [](const auto& info) { return std::string(ggml_type_traits(info.param).name); });

// Decode's stream ahead prefetches every line of the next group once over the current group's iterations, a few at
// each: the group sizes of the models' matrices (Q4_1 records of 320 bytes, K = 576 .. 1536) and awkward ones.
TEST(NextGroupPrefetchSchedule, CoversEveryLineByTheLastIterationEvenly) {
  for (const uint64_t lines : {uint64_t{1}, uint64_t{3}, uint64_t{90}, uint64_t{240}, uint64_t{241}, uint64_t{4096}})
    for (const int64_t iterations : {int64_t{1}, int64_t{2}, int64_t{18}, int64_t{36}, int64_t{96}, int64_t{1000}}) {
      const uint64_t step = next_group_step(lines, iterations);
      const uint64_t most = lines / static_cast<uint64_t>(iterations) + 2;  // lines an iteration, at most
      uint64_t before = 0;
      for (int64_t i = 0; i < iterations; ++i) {
        const uint64_t by = next_group_lines_by(i, step, lines);
        ASSERT_GE(by, before) << lines << " lines, " << iterations << " iterations, at " << i;
        ASSERT_LE(by - before, most) << lines << " lines, " << iterations << " iterations, at " << i;
        before = by;
      }
      EXPECT_EQ(before, lines) << lines << " lines over " << iterations << " iterations";
    }
}

}  // namespace
}  // namespace pagoda
