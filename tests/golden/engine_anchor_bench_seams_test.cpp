// The engine seams of the anchor benchmark (pagoda bench anchors):
// - the benchmark-only verification cadences (EngineConfig::anchor_recheck): how often each re-checks, that
//   re-checks never change a token or a logit, and that a failed signature check ends the request;
// - revocation reports (Engine::anchor_revocation): which step last attended to a revoked anchor;
// - the attention probe's distance buckets agree with its totals.
#include <gtest/gtest.h>

#include <atomic>

#include "engine_anchor_fixture.h"

namespace pagoda {
namespace {

class EngineAnchorBenchSeams : public EngineAnchor {
 protected:
  static EngineConfig recheck_config(AnchorRecheckCadence cadence, std::atomic<int>* calls, bool fail = false) {
    EngineConfig c = config(16, 256, true);
    c.anchor_recheck.cadence = cadence;
    c.anchor_recheck.verify_signature = [calls, fail](const std::string& digest) -> Status {
      ++*calls;
      if (fail) return make_error("signature of " + digest + " no longer verifies");
      return {};
    };
    return c;
  }
  static Output run_one(Engine& e, const std::string& anchor, const std::vector<int32_t>& prompt, int64_t max_tokens) {
    GenerationRequest r;
    r.anchor = anchor;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    auto stream = e.submit(r);
    e.run_until_idle();
    Output o;
    drain(*stream, o);
    return o;
  }
};

TEST_F(EngineAnchorBenchSeams, EachCadenceRechecksAsOftenAsItSaysAndNeverChangesTheBits) {
  const auto anchor = anchor_tokens(11, 40);
  Rng rng(3);
  const auto prompt = random_tokens(rng, 9);
  // Reference: the default cadence (session) runs no re-check at all.
  auto plain = Engine::create(*model_, config(16, 256, true));
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(activate(**plain, "d", anchor).ok());
  const Output want = run_one(**plain, "d", prompt, 40);
  EXPECT_EQ((*plain)->stats().anchor_rechecks, 0);

  struct Case {
    AnchorRecheckCadence cadence;
    int64_t requests, expected;
  };
  // 40 tokens each: token re-checks every one, block at generated counts 0, 16 and 32, segment once per admission.
  for (Case c : {Case{AnchorRecheckCadence::kToken, 1, 40}, Case{AnchorRecheckCadence::kBlock, 1, 3},
                 Case{AnchorRecheckCadence::kSegment, 3, 3}}) {
    std::atomic<int> calls{0};
    auto e = Engine::create(*model_, recheck_config(c.cadence, &calls));
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(activate(**e, "d", anchor).ok());
    for (int64_t r = 0; r < c.requests; ++r) expect_bitwise(run_one(**e, "d", prompt, 40), want, "re-checked");
    EXPECT_EQ((*e)->stats().anchor_rechecks, c.expected) << anchor_recheck_cadence_name(c.cadence);
    EXPECT_EQ(calls.load(), c.expected) << anchor_recheck_cadence_name(c.cadence);
    EXPECT_GT((*e)->stats().anchor_recheck_seconds, 0.0);
  }
}

// The step cadence checks an anchor once per step for all the sequences sampling from it: 3 concurrent requests
// of 40 tokens re-check 40 times (token: 120), and a second anchor in the same steps adds its own checks.
TEST_F(EngineAnchorBenchSeams, StepCadenceChecksEachAnchorOncePerStep) {
  const auto anchor = anchor_tokens(11, 40);
  for (int anchors : {1, 2}) {
    std::atomic<int> calls{0};
    auto created = Engine::create(*model_, recheck_config(AnchorRecheckCadence::kStep, &calls));
    ASSERT_TRUE(created.ok());
    Engine& e = **created;
    ASSERT_TRUE(activate(e, "d", anchor).ok());
    if (anchors == 2) {
      ASSERT_TRUE(activate(e, "other", anchor_tokens(12, 24)).ok());
    }
    std::vector<GenerationRequest> requests;
    for (int i = 0; i < 3; ++i) {
      GenerationRequest r;
      r.anchor = anchors == 2 && i == 2 ? "other" : "d";
      r.prompt = {310, 311, static_cast<int32_t>(312 + i)};  // equal lengths: admitted and finished together
      r.max_tokens = 40;
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      requests.push_back(std::move(r));
    }
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (auto& r : requests) streams.push_back(e.submit(std::move(r)));
    e.run_until_idle();
    for (auto& s : streams) {
      Output o;
      drain(*s, o);
      EXPECT_EQ(o.finish, FinishReason::kLength);
      EXPECT_EQ(o.ids.size(), 40u);
    }
    EXPECT_EQ(e.stats().anchor_rechecks, 40 * anchors) << anchors << " anchors";
    EXPECT_EQ(calls.load(), 40 * anchors);
  }
}

TEST_F(EngineAnchorBenchSeams, AFailedRecheckEndsTheRequestWithItsReason) {
  for (auto cadence : {AnchorRecheckCadence::kToken, AnchorRecheckCadence::kSegment, AnchorRecheckCadence::kStep}) {
    std::atomic<int> calls{0};
    auto e = Engine::create(*model_, recheck_config(cadence, &calls, /*fail=*/true));
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(activate(**e, "d", anchor_tokens(2, 20)).ok());
    const Output got = run_one(**e, "d", {300, 301}, 8);
    EXPECT_EQ(got.finish, FinishReason::kError) << anchor_recheck_cadence_name(cadence);
    EXPECT_NE(got.error.find("no longer verifies"), std::string::npos) << got.error;
    EXPECT_TRUE(got.ids.empty()) << "a token was sampled after the failed check";
  }
}

TEST_F(EngineAnchorBenchSeams, RevocationReportNamesTheLastStepThatAttended) {
  auto created = Engine::create(*model_, config(16, 256, true));
  ASSERT_TRUE(created.ok());
  Engine& e = **created;
  ASSERT_TRUE(activate(e, "d", anchor_tokens(5, 24)).ok());
  ASSERT_TRUE(activate(e, "other", anchor_tokens(6, 24)).ok());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r;
    r.anchor = i < 2 ? "d" : "other";
    r.prompt = {310, 311, static_cast<int32_t>(312 + i)};
    r.max_tokens = 50;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    streams.push_back(e.submit(std::move(r)));
  }
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(e.step());
  const int64_t steps_before = e.stats().steps;
  e.revoke_anchor("d");  // between steps: the next step applies it, and no step from it on attends
  ASSERT_TRUE(e.step());
  auto report = e.anchor_revocation("d");
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->arrival_step, steps_before);
  EXPECT_EQ(report->applied_step, steps_before);
  EXPECT_EQ(report->last_attended_step, steps_before - 1);
  EXPECT_EQ(report->steps_after_arrival(), 0);
  EXPECT_FALSE(e.anchor_revocation("other").has_value());
  e.run_until_idle();
  for (int i = 0; i < 3; ++i) {
    Output o;
    drain(*streams[i], o);
    EXPECT_EQ(o.finish, i < 2 ? FinishReason::kAnchorRevoked : FinishReason::kLength) << i;
  }
}

TEST_F(EngineAnchorBenchSeams, AttentionDistanceBucketsAddUpToTheTotals) {
  EngineConfig c = config(16, 256, true);
  c.probe_anchor_attention = true;
  auto created = Engine::create(*model_, c);
  ASSERT_TRUE(created.ok());
  Engine& e = **created;
  ASSERT_TRUE(activate(e, "d", anchor_tokens(8, 30)).ok());
  Rng rng(4);
  run_one(e, "d", random_tokens(rng, 20), 25);
  auto a = e.anchor_attention("d");
  ASSERT_TRUE(a.has_value());
  const int64_t LH = static_cast<int64_t>(a->n_layer) * a->n_head;
  int64_t queries = 0;
  for (int64_t q : a->distance_queries) queries += q;
  EXPECT_EQ(queries, a->prompt_queries + a->generated_queries);
  // Distances 1..44 (20 prompt + 24 generated queries): buckets [1], [2,3], [4,7], [8,15], [16,31], [32,63].
  ASSERT_EQ(a->distance_queries.size(), 6u);
  EXPECT_EQ(a->distance_queries[0], 1);
  EXPECT_EQ(a->distance_queries[5], 44 - 31);
  for (int64_t i = 0; i < LH; ++i) {
    double weighted = 0;
    for (size_t b = 0; b < a->distance_queries.size(); ++b)
      weighted += a->distance_mass[b * LH + i] * a->distance_queries[b];
    const double total = a->prompt_mass[i] * a->prompt_queries + a->generated_mass[i] * a->generated_queries;
    EXPECT_NEAR(weighted, total, 1e-9 * std::max(1.0, total));
  }
}

}  // namespace
}  // namespace pagoda
