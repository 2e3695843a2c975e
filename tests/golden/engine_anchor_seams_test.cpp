// The two anchor seams the anchor benchmark uses, both off by default:
// - the per-anchor layer mask (AnchorServing::visible_layers): an anchor visible to every layer is the default,
//   bit for bit; a masked anchor gives the same bits alone, in busy batches, at every block size, with caching on
//   or off and under preemption; hidden from every layer it is (nearly) no anchor at all; requests' blocks
//   computed under a mask are never served to requests without it;
// - the instrumented attention path (EngineConfig::probe_anchor_attention): never changes a token or a logit,
//   counts every query, and sees no mass on the anchor where the mask hides it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine_anchor_fixture.h"

namespace pagoda {
namespace {

class EngineAnchorSeams : public EngineAnchor {
 protected:
  static Result<AnchorActivation> activate_masked(Engine& e, const std::string& digest,
                                                  const std::vector<int32_t>& tokens, std::vector<uint8_t> visible) {
    auto f = e.activate_anchor(digest, tokens, AnchorServing{std::move(visible)});
    e.step();
    return f.get();
  }
  static GenerationRequest greedy(const std::string& anchor, std::vector<int32_t> prompt, int64_t max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.anchor = anchor;
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    return r;
  }
  static Output run_one(Engine& e, const GenerationRequest& r) {
    auto stream = e.submit(r);
    e.run_until_idle();
    Output o;
    drain(*stream, o);
    return o;
  }
  static void expect_same_bits(const Output& got, const Output& want, const std::string& what) {
    ASSERT_NE(got.finish, FinishReason::kError) << what << ": " << got.error;
    ASSERT_EQ(got.ids, want.ids) << what;
    for (size_t s = 0; s < got.ids.size(); ++s)
      ASSERT_EQ(0, std::memcmp(got.logits[s].data(), want.logits[s].data(), got.logits[s].size() * sizeof(float)))
          << what << " step " << s;
  }
  static float max_logit_difference(const Output& a, const Output& b) {
    float worst = 0.0f;
    for (size_t s = 0; s < std::min(a.logits.size(), b.logits.size()); ++s)
      for (size_t v = 0; v < a.logits[s].size(); ++v) worst = std::max(worst, std::abs(a.logits[s][v] - b.logits[s][v]));
    return worst;
  }
};

const std::vector<uint8_t> kLayers024Visible = {1, 0, 1, 0, 1};  // stories260K has 5 layers; 1 and 3 skip the anchor

TEST_F(EngineAnchorSeams, AnchorVisibleToEveryLayerIsTheDefaultBitwise) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const auto a = anchor_tokens(31, 21);
  ASSERT_TRUE(activate_masked(e, "d", a, {1, 1, 1, 1, 1}).ok());
  Rng rng(3);
  const auto prompt = random_tokens(rng, 19);
  std::vector<int32_t> plain = a;
  plain.insert(plain.end(), prompt.begin(), prompt.end());
  expect_same_bits(run_one(e, greedy("d", prompt, 12)), run_alone(plain, 12), "all-visible mask");
}

struct MaskCase {
  int32_t block_size;
  bool caching;
};

class EngineAnchorMask : public EngineAnchorSeams, public ::testing::WithParamInterface<MaskCase> {};

// A masked anchor's requests in a busy batch (with plain and unmasked-anchor requests around them, a pool small
// enough to preempt) give the bits the same request gets alone at block size 16 with caching off.
TEST_P(EngineAnchorMask, MaskedAnchorIsBatchBlockSizeAndPreemptionInvariant) {
  const auto [bs, caching] = GetParam();
  const auto a = anchor_tokens(41, 37);
  Rng rng(17);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(random_tokens(rng, 5 + static_cast<int>(rng.next_u64() % 40)));
  prompts[3] = prompts[1];  // a shared prompt: cache hits on blocks computed under the mask
  const int64_t max_tokens = 20;

  std::vector<Output> alone;
  {
    auto engine = Engine::create(*model_, config(16, 512, false));
    ASSERT_TRUE(engine.ok());
    ASSERT_TRUE(activate_masked(**engine, "m", a, kLayers024Visible).ok());
    for (const auto& p : prompts) alone.push_back(run_one(**engine, greedy("m", p, max_tokens)));
  }
  // The mask takes effect: the unmasked anchor gives other logits for the same request.
  std::vector<int32_t> plain = a;
  plain.insert(plain.end(), prompts[0].begin(), prompts[0].end());
  EXPECT_GT(max_logit_difference(alone[0], run_alone(plain, max_tokens)), 1e-3f);

  // Room for the anchors and a few sequences only: requests are preempted and recomputed.
  auto engine = Engine::create(*model_, config(bs, (bs == 1 ? 420 : 420 / bs + 8), caching));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  ASSERT_TRUE(activate_masked(e, "m", a, kLayers024Visible).ok());
  ASSERT_TRUE(activate(e, "u", anchor_tokens(42, 9)).ok());
  std::vector<std::shared_ptr<RequestStream>> masked, others;
  for (size_t i = 0; i < prompts.size(); ++i) {
    masked.push_back(e.submit(greedy("m", prompts[i], max_tokens)));
    others.push_back(e.submit(greedy(i % 2 ? "u" : "", prompts[(i + 1) % prompts.size()], max_tokens)));
  }
  std::vector<Output> got(prompts.size()), ignored(prompts.size());
  while (e.step()) {
    ASSERT_TRUE(e.check_invariants().ok());
    for (size_t i = 0; i < prompts.size(); ++i) drain(*masked[i], got[i]);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    drain(*masked[i], got[i]);
    expect_same_bits(got[i], alone[i], "masked request " + std::to_string(i));
  }
  if (bs == 16) {
    EXPECT_GT(e.stats().preemptions, 0) << "the pool should be small enough to preempt";
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizesAndCaching, EngineAnchorMask,
                         ::testing::Values(MaskCase{1, true}, MaskCase{16, true}, MaskCase{32, true},
                                           MaskCase{16, false}),
                         [](const auto& info) {
                           return "bs" + std::to_string(info.param.block_size) +
                                  (info.param.caching ? "_cached" : "_uncached");
                         });

// Hidden from every layer, the anchor is only a position offset: rotary attention depends on relative positions,
// so the request is the prompt alone up to rounding (not bitwise: the rotations are at other angles).
TEST_F(EngineAnchorSeams, AnchorHiddenFromEveryLayerIsNearlyNoAnchor) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  ASSERT_TRUE(activate_masked(e, "h", anchor_tokens(51, 30), {0, 0, 0, 0, 0}).ok());
  Rng rng(5);
  std::vector<int32_t> prompt{1};
  const auto rest = random_tokens(rng, 20);
  prompt.insert(prompt.end(), rest.begin(), rest.end());
  const Output got = run_one(e, greedy("h", prompt, 8));
  const Output want = run_alone(prompt, 8);
  ASSERT_EQ(got.ids, want.ids);
  EXPECT_LT(max_logit_difference(got, want), 2e-3f);
}

// Blocks a request computed under a mask are cached under the mask: after the anchor comes back without one, the
// same request must not reuse them (it would get the masked K/V) and matches the plain prompt bit for bit.
TEST_F(EngineAnchorSeams, BlocksComputedUnderAMaskAreNotServedWithoutIt) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const auto a = anchor_tokens(61, 16);
  Rng rng(7);
  const auto prompt = random_tokens(rng, 50);  // three full blocks of its own
  ASSERT_TRUE(activate_masked(e, "d", a, kLayers024Visible).ok());
  run_one(e, greedy("d", prompt, 2));
  e.deactivate_anchor("d");
  e.step();
  ASSERT_EQ(e.stats().blocks.used_blocks, 0);
  ASSERT_TRUE(activate(e, "d", a).ok());
  const int64_t hits_before = e.stats().blocks.prefix_hit_tokens;
  std::vector<int32_t> plain = a;
  plain.insert(plain.end(), prompt.begin(), prompt.end());
  expect_same_bits(run_one(e, greedy("d", prompt, 6)), run_alone(plain, 6), "unmasked after masked");
  EXPECT_EQ(e.stats().blocks.prefix_hit_tokens, hits_before);
}

TEST_F(EngineAnchorSeams, MaskErrorsNameTheProblem) {
  auto engine = Engine::create(*model_, config(16, 512, true));
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  auto wrong_size = activate_masked(e, "d", anchor_tokens(71, 10), {1, 0});
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_EQ(wrong_size.error().code, "bad_field");
  EXPECT_NE(wrong_size.error().message.find("5 layers"), std::string::npos) << wrong_size.error().message;
  ASSERT_TRUE(activate_masked(e, "d", anchor_tokens(71, 10), kLayers024Visible).ok());
  auto conflict = activate(e, "d", anchor_tokens(71, 10));
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, "anchor_conflict");
  EXPECT_NE(conflict.error().message.find("layers 10101"), std::string::npos) << conflict.error().message;
  EXPECT_TRUE(activate_masked(e, "d", anchor_tokens(71, 10), kLayers024Visible).ok()) << "the same mask again";
}

// The probe never changes a bit, counts every query, gives masses in [0, 1] that are not trivial where the anchor
// is visible, and exactly 0 where the mask hides it.
TEST_F(EngineAnchorSeams, ProbeMeasuresAttentionOnTheAnchorWithoutChangingOutputs) {
  const auto a = anchor_tokens(81, 40);
  Rng rng(9);
  const auto prompt = random_tokens(rng, 23);
  const int64_t max_tokens = 10;
  std::vector<int32_t> plain = a;
  plain.insert(plain.end(), prompt.begin(), prompt.end());
  EngineConfig c = config(16, 512, true);
  c.probe_anchor_attention = true;
  auto engine = Engine::create(*model_, c);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  EXPECT_FALSE(e.anchor_attention("v").has_value());
  ASSERT_TRUE(activate(e, "v", a).ok());
  ASSERT_TRUE(activate_masked(e, "m", anchor_tokens(82, 40), kLayers024Visible).ok());
  const Output got = run_one(e, greedy("v", prompt, max_tokens));
  expect_same_bits(got, run_alone(plain, max_tokens), "probe on");
  run_one(e, greedy("m", prompt, max_tokens));

  auto v = e.anchor_attention("v");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->n_layer, 5);
  EXPECT_EQ(v->n_head, 8);
  EXPECT_EQ(v->prompt_queries, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(v->generated_queries, static_cast<int64_t>(got.ids.size()) - 1);
  for (size_t i = 0; i < v->prompt_mass.size(); ++i) {
    EXPECT_GT(v->prompt_mass[i], 0.0) << i;
    EXPECT_LT(v->prompt_mass[i], 1.0) << i;
    EXPECT_GE(v->generated_mass[i], 0.0) << i;
    EXPECT_LE(v->generated_mass[i], 1.0) << i;
  }
  auto m = e.anchor_attention("m");
  ASSERT_TRUE(m.has_value());
  for (int l = 0; l < 5; ++l)
    for (int h = 0; h < 8; ++h) {
      const double mass = m->prompt_mass[l * 8 + h];
      if (kLayers024Visible[l])
        EXPECT_GT(mass, 0.0) << "layer " << l << " head " << h;
      else
        EXPECT_EQ(mass, 0.0) << "layer " << l << " head " << h << " is hidden from the anchor";
    }
}

}  // namespace
}  // namespace pagoda
