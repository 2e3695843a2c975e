#include "perf/roofline.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pagoda {
namespace {

const std::string kShared = PAGODA_SHARED_DIR;

TEST(Roofline, DecodeCostCountsEveryMatrixOnceAndTheContextsKv) {
  auto m = Model::load(kShared + "/models/stories260K.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const ModelHParams& hp = (*m)->hparams();
  // stories260K is all F32: bytes = 4 * parameters of the matrices (+ one embedding row), ops = 2 * parameters.
  const int64_t per_layer = hp.n_embd * (hp.q_dim() + 2 * hp.kv_dim()) + hp.q_dim() * hp.n_embd + 3 * hp.n_embd * hp.n_ff;
  const int64_t params = hp.n_layer * per_layer + hp.n_vocab * hp.n_embd;
  const DecodeCost c = decode_cost(**m, KvDtype::kF16, 100);
  EXPECT_EQ(c.weight_bytes, static_cast<uint64_t>(4 * params + 4 * hp.n_embd));
  EXPECT_DOUBLE_EQ(c.ops, 2.0 * params);
  EXPECT_EQ(c.kv_bytes, static_cast<uint64_t>(2 * hp.n_layer * 100 * hp.kv_dim() * 2));
  ASSERT_EQ(c.ops_by_type.size(), 1u);
  EXPECT_DOUBLE_EQ(c.ops_by_type.at(GgmlType::F32), c.ops);
  EXPECT_EQ(decode_cost(**m, KvDtype::kF32, 100).kv_bytes, 2 * c.kv_bytes);
}

TEST(Roofline, MeasuredRatesArePositiveAndFinite) {
  ThreadPool pool(2);
  const double bw = measure_read_bandwidth(pool, uint64_t{16} << 20, 2);
  EXPECT_GT(bw, 1e8);  // above 0.1 GB/s on anything that runs these tests
  EXPECT_TRUE(std::isfinite(bw));
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_K}) {
    const double rate = measure_decode_matmul_rate(t, 256, pool);
    EXPECT_GT(rate, 1e7) << ggml_type_traits(t).name;
    EXPECT_TRUE(std::isfinite(rate));
  }
}

}  // namespace
}  // namespace pagoda
