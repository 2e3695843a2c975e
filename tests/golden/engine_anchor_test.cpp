// Gate 0 for verified anchors: a request that starts from an active anchor's pinned blocks produces greedy tokens
// and logits bitwise identical to the same tokens sent as a plain prompt (anchor tokens, then the prompt without
// its BOS) through the single-sequence path: with prefix caching on and off, in busy batches, under preemption,
// at block sizes 1, 16 and 32, for anchors ending inside a block and on a block boundary. Also: a plain prompt
// with the anchor's tokens never reaches anchor blocks; revocation ends running requests at the next step;
// deactivation lets them finish; pinned blocks come back once nobody holds them.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/engine.h"
#include "engine_anchor_fixture.h"
#include "model/model.h"
#include "util/rng.h"

namespace pagoda {
namespace {

struct AnchorGateCase {
  int32_t block_size;
  bool caching;
};

class EngineAnchorGate : public EngineAnchor, public ::testing::WithParamInterface<AnchorGateCase> {};

// Two anchors (one ending inside a block, one on a boundary when the block size allows), 12 requests in one busy
// batch: anchored ones with various prompts, two sharing a prompt prefix, and plain ones, including a plain prompt
// that repeats an anchor's tokens exactly.
TEST_P(EngineAnchorGate, AnchoredRequestsMatchThePlainPromptBitwise) {
  const auto [bs, caching] = GetParam();
  auto engine = Engine::create(*model_, config(bs, 8192 / bs, caching));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::vector<int32_t> a_inside = anchor_tokens(11, bs == 1 ? 21 : bs + 5);
  const std::vector<int32_t> a_boundary = anchor_tokens(12, bs == 1 ? 32 : 2 * bs);
  auto act = activate(e, "digest-inside", a_inside);
  ASSERT_TRUE(act.ok()) << act.error().message;
  EXPECT_EQ(act->tokens, static_cast<int32_t>(a_inside.size()));
  EXPECT_EQ(act->blocks, static_cast<int32_t>((a_inside.size() + bs - 1) / bs));
  ASSERT_TRUE(activate(e, "digest-boundary", a_boundary).ok());
  const int32_t pinned_blocks = e.stats().blocks.used_blocks;

  Rng rng(bs * 7 + caching);
  const auto shared_tail = random_tokens(rng, 40);
  struct Job {
    std::string anchor;
    std::vector<int32_t> prompt;  // without BOS when anchored
    std::vector<int32_t> plain;   // what the same request is as a plain prompt
    int64_t max_tokens;
  };
  std::vector<Job> jobs;
  for (int i = 0; i < 12; ++i) {
    Job j;
    j.max_tokens = 4 + static_cast<int64_t>(rng.next_u64() % 24);
    const int kind = i % 4;
    if (kind == 3) {  // plain
      j.plain = {1};
      auto t = i == 3 ? std::vector<int32_t>(a_inside.begin() + 1, a_inside.end()) : random_tokens(rng, 30);
      j.plain.insert(j.plain.end(), t.begin(), t.end());
      if (i == 3) j.plain.push_back(7);  // the anchor's exact tokens, then one more
      j.prompt = j.plain;
    } else {
      j.anchor = kind == 1 ? "digest-boundary" : "digest-inside";
      j.prompt = kind == 2 ? shared_tail : random_tokens(rng, 1 + static_cast<int>(rng.next_u64() % 50));
      if (kind == 2 && i > 2) j.prompt.push_back(static_cast<int32_t>(100 + i));
      const auto& a = j.anchor == "digest-boundary" ? a_boundary : a_inside;
      j.plain = a;
      j.plain.insert(j.plain.end(), j.prompt.begin(), j.prompt.end());
    }
    jobs.push_back(std::move(j));
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < jobs.size(); ++i) {
    GenerationRequest r;
    r.id = std::to_string(i);
    r.prompt = jobs[i].prompt;
    r.anchor = jobs[i].anchor;
    r.max_tokens = jobs[i].max_tokens;
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    streams.push_back(e.submit(r));
    if (i == 5) e.step();  // staggered arrival
  }
  std::vector<Output> got(jobs.size());
  for (int step = 0; e.step(); ++step) {
    ASSERT_TRUE(e.check_invariants().ok()) << "step " << step;
    for (size_t i = 0; i < jobs.size(); ++i) drain(*streams[i], got[i]);
  }
  for (size_t i = 0; i < jobs.size(); ++i) drain(*streams[i], got[i]);
  for (size_t i = 0; i < jobs.size(); ++i)
    expect_bitwise(got[i], run_alone(jobs[i].plain, jobs[i].max_tokens),
                   "request " + std::to_string(i) + (jobs[i].anchor.empty() ? " (plain)" : " (" + jobs[i].anchor + ")"));
  // Only the pinned blocks remain in use; the plain prompt with the anchor's tokens found none of them.
  EXPECT_EQ(e.stats().blocks.used_blocks, pinned_blocks);
  // Anchored requests with a common prompt prefix share its blocks through the cache (keys chained from the
  // anchor's); without caching nothing is found.
  if (caching)
    EXPECT_GT(e.stats().blocks.prefix_hit_tokens, 0);
  else
    EXPECT_EQ(e.stats().blocks.prefix_hit_tokens, 0);
  // Deactivated with no user: the pinned blocks come back at the next step.
  e.deactivate_anchor("digest-inside");
  e.deactivate_anchor("digest-boundary");
  e.step();
  EXPECT_EQ(e.stats().blocks.used_blocks, 0);
  EXPECT_TRUE(e.check_invariants().ok());
}

INSTANTIATE_TEST_SUITE_P(BlockSizesAndCaching, EngineAnchorGate,
                         ::testing::Values(AnchorGateCase{1, true}, AnchorGateCase{16, true}, AnchorGateCase{32, true},
                                           AnchorGateCase{1, false}, AnchorGateCase{16, false},
                                           AnchorGateCase{32, false}),
                         [](const auto& info) {
                           return "bs" + std::to_string(info.param.block_size) +
                                  (info.param.caching ? "_cached" : "_uncached");
                         });

TEST_F(EngineAnchor, PlainPromptWithTheAnchorTokensNeitherHitsNorCreatesAnchorBlocks) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const auto a = anchor_tokens(21, 48);  // three full blocks
  ASSERT_TRUE(activate(e, "d", a).ok());
  const int32_t pinned = e.stats().blocks.used_blocks;
  GenerationRequest plain;
  plain.prompt = a;
  plain.prompt.push_back(9);
  plain.max_tokens = 2;
  plain.sampling.temperature = 0.0f;
  e.submit(plain);
  e.run_until_idle();
  EXPECT_EQ(e.stats().blocks.prefix_hit_tokens, 0) << "a plain prompt reached the anchor's blocks";
  e.submit(plain);
  e.run_until_idle();
  EXPECT_EQ(e.stats().blocks.prefix_hit_tokens, 48) << "the plain prompt's own blocks are cached as usual";
  EXPECT_EQ(e.stats().blocks.used_blocks, pinned);
  // And the anchor still serves a request that names it with the same answer as the plain prompt.
  GenerationRequest anchored = plain;
  anchored.anchor = "d";
  anchored.prompt = {9};
  anchored.return_logits = true;
  auto s = e.submit(anchored);
  e.run_until_idle();
  Output o;
  drain(*s, o);
  expect_bitwise(o, run_alone(plain.prompt, 2), "anchored after plain");
}

TEST_F(EngineAnchor, PinnedBlocksSurvivePreemptionAndRequestsStillMatch) {
  auto engine = Engine::create(*model_, config(16, 48, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const auto a = anchor_tokens(31, 37);
  ASSERT_TRUE(activate(e, "d", a).ok());
  Rng rng(5);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 6; ++i) {
    GenerationRequest r;
    r.prompt = random_tokens(rng, 10 + i * 7);
    r.anchor = "d";
    r.max_tokens = 120;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    prompts.push_back(r.prompt);
    streams.push_back(e.submit(r));
  }
  std::vector<Output> got(6);
  while (e.step()) {
    ASSERT_TRUE(e.check_invariants().ok());
    for (int i = 0; i < 6; ++i) drain(*streams[i], got[i]);
  }
  for (int i = 0; i < 6; ++i) drain(*streams[i], got[i]);
  EXPECT_GE(e.stats().preemptions, 1) << "the pool was meant to be too small";
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> plain = a;
    plain.insert(plain.end(), prompts[i].begin(), prompts[i].end());
    Output want = run_alone(plain, 120);
    // run_alone stops at EOS; the engine ignored it: compare the common part.
    got[i].ids.resize(std::min(got[i].ids.size(), want.ids.size()));
    want.ids.resize(got[i].ids.size());
    expect_bitwise(got[i], want, "request " + std::to_string(i));
  }
  EXPECT_EQ(e.stats().blocks.used_blocks, 3) << "only the anchor's pinned blocks remain";
}

TEST_F(EngineAnchor, RevocationEndsRunningRequestsAtTheNextStepAndFreesTheBlocks) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  ASSERT_TRUE(activate(e, "d", anchor_tokens(41, 20)).ok());
  GenerationRequest r;
  r.prompt = {5, 6, 7};
  r.anchor = "d";
  r.max_tokens = 500;
  r.ignore_eos = true;
  auto running = e.submit(r);
  for (int i = 0; i < 5; ++i) e.step();
  Output before;
  drain(*running, before);
  ASSERT_FALSE(before.ids.empty());
  e.revoke_anchor("d");
  auto late = e.submit(r);  // arrives with the revocation: refused
  e.step();
  Output after, refused;
  drain(*running, after);
  drain(*late, refused);
  EXPECT_TRUE(after.ids.empty()) << "a step after the revocation still generated with the anchor";
  EXPECT_EQ(after.finish, FinishReason::kAnchorRevoked);
  EXPECT_EQ(refused.finish, FinishReason::kError);
  EXPECT_NE(refused.error.find("not active"), std::string::npos) << refused.error;
  e.run_until_idle();
  EXPECT_EQ(e.stats().blocks.used_blocks, 0) << "the anchor's blocks are freed once nobody holds them";
  EXPECT_TRUE(e.check_invariants().ok());
}

TEST_F(EngineAnchor, DeactivationLetsRunningRequestsFinishThenUnpins) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const auto a = anchor_tokens(51, 20);
  ASSERT_TRUE(activate(e, "d", a).ok());
  GenerationRequest r;
  r.prompt = {5, 6, 7};
  r.anchor = "d";
  r.max_tokens = 30;
  r.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  auto running = e.submit(r);
  for (int i = 0; i < 3; ++i) e.step();
  e.deactivate_anchor("d");
  e.step();
  EXPECT_GT(e.stats().blocks.used_blocks, 0);
  auto late = e.submit(r);
  e.run_until_idle();
  Output o, refused;
  drain(*running, o);
  drain(*late, refused);
  EXPECT_EQ(o.finish, FinishReason::kLength);
  EXPECT_EQ(o.ids.size(), 30u);
  EXPECT_EQ(refused.finish, FinishReason::kError);
  EXPECT_EQ(e.stats().blocks.used_blocks, 0);
}

TEST_F(EngineAnchor, PinnedShareOfThePoolIsBounded) {
  EngineConfig c = config(16, 100, true);
  c.anchor_max_pinned_frac = 0.1;  // 10 blocks
  auto engine = Engine::create(*model_, c);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  ASSERT_TRUE(activate(e, "a", anchor_tokens(61, 100)).ok());  // 7 blocks
  auto over = activate(e, "b", anchor_tokens(62, 64));          // 4 more: 11 > 10
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "anchor_pool_full");
  EXPECT_EQ(e.stats().blocks.used_blocks, 7) << "a refused activation allocates nothing";
  auto again = activate(e, "a", anchor_tokens(61, 100));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->prefill_seconds, 0.0) << "activating an active anchor compiles nothing";
}

}  // namespace
}  // namespace pagoda
