// Poisson-arrival cells of `pagoda bench anchors` on stories260K: the mode's requests are counted apart from the
// unrelated (eviction) traffic, a large pool keeps the cached text for every request, a pool that holds one request
// at a time loses it to the unrelated requests, and a pinned anchor is found whole by every request either way.
#include <gtest/gtest.h>

#include "../test_models.h"
#include "anchorbench/anchor_bench.h"
#include "anchorbench/bench_anchor_signer.h"

namespace pagoda::anchorbench {
namespace {

constexpr int32_t kAnchorTokens = 64;  // four whole blocks of 16
constexpr int64_t kContext = 32, kGen = 4;

class ArrivalCell : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = BenchAnchorSigner::create(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf", stories260k());
    ASSERT_TRUE(s.ok()) << s.error().message;
    signer_ = std::make_unique<BenchAnchorSigner>(std::move(*s));
    setup_.model = &stories260k();
    setup_.signer = signer_.get();
    setup_.engine.block_size = 16;
    setup_.engine.num_threads = 1;
  }
  ArrivalResult run(BenchMode mode, int64_t pool_blocks, double unrelated_share) {
    setup_.engine.num_blocks = pool_blocks;
    setup_.engine.kv_cache_bytes = 0;
    ArrivalSpec spec;
    spec.cell = CellSpec{mode, kAnchorTokens, kContext, 1, kGen, 1, AnchorRecheckCadence::kSession};
    spec.rate = 10000;  // every request arrives at once: the scheduler's order is the arrival order
    spec.requests = 6;
    spec.unrelated_share = unrelated_share;
    auto r = run_arrival_cell(setup_, spec);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : ArrivalResult{};
  }
  BenchSetup setup_;
  std::unique_ptr<BenchAnchorSigner> signer_;
};

TEST_F(ArrivalCell, CountsTheModesRequestsApartFromTheUnrelatedOnes) {
  const ArrivalResult r = run(BenchMode::kTextCached, 256, 0.5);
  EXPECT_EQ(r.requests, 6);
  EXPECT_EQ(r.unrelated_requests, 6);
  EXPECT_EQ(r.tokens, 6 * kGen);  // the mode's tokens only
  EXPECT_EQ(r.unrelated_ttft_ms.count, 6u);
  EXPECT_EQ(r.ttft_ms.count, 6u);
}

TEST_F(ArrivalCell, ALargePoolKeepsTheTextCachedForEveryRequest) {
  const ArrivalResult r = run(BenchMode::kTextCached, 256, 0.5);
  EXPECT_EQ(r.text_fully_cached_share, 1.0);
  EXPECT_GE(r.cached_prompt_tokens_mean, kAnchorTokens);
  EXPECT_EQ(r.preemptions, 0);
}

TEST_F(ArrivalCell, UnrelatedTrafficInASmallPoolEvictsTheTextButNotAPinnedAnchor) {
  // 8 blocks: one request of 64 + 32 + 4 tokens (7 blocks) at a time, so an unrelated request run between two of the
  // mode's evicts the text's blocks.
  const ArrivalResult text = run(BenchMode::kTextCached, 8, 0.5);
  EXPECT_EQ(text.requests, 6);
  EXPECT_LT(text.text_fully_cached_share, 1.0);
  EXPECT_LT(text.cached_prompt_tokens_mean, kAnchorTokens);
  // 24 blocks: the anchors may pin a quarter of the pool (its 4 blocks), and the unrelated requests use the rest.
  const ArrivalResult anchor = run(BenchMode::kAnchor, 24, 0.5);
  EXPECT_EQ(anchor.requests, 6);
  EXPECT_EQ(anchor.text_fully_cached_share, 1.0);
  EXPECT_GE(anchor.cached_prompt_tokens_mean, kAnchorTokens);
}

TEST_F(ArrivalCell, RefusesAnUnrelatedShareOutsideItsRange) {
  setup_.engine.num_blocks = 64;
  ArrivalSpec spec;
  spec.cell = CellSpec{BenchMode::kTextCached, kAnchorTokens, kContext, 1, kGen, 1, AnchorRecheckCadence::kSession};
  spec.unrelated_share = 0.99;
  auto r = run_arrival_cell(setup_, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unrelated share"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace pagoda::anchorbench
