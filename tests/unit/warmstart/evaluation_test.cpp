// The evaluation harness on a few stories260K pairs: cold-equivalent methods are exactly cold (warm start off, the
// prefix cache, a blend that recomputes everything), the rest are measured, and bad settings are refused.
#include "warmstart/evaluation.h"

#include <gtest/gtest.h>

#include "refusal.h"
#include "test_models.h"
#include "warmstart/fit.h"

namespace pagoda::warmstart {
namespace {

const MethodOutcome& method(const RequestOutcome& r, const std::string& name) {
  for (const auto& m : r.methods)
    if (m.method == name) return m;
  ADD_FAILURE() << "no method " << name;
  return r.methods.front();
}

// A few short story pairs and shared maps fitted on their training half (m = 8).
struct SmallCase {
  PairSplit split;
  Result<WarmStartMaps> maps;
};
SmallCase small_case(const Model& model) {
  DataOptions data;
  data.instances_per_template = 1;
  data.adversarial_per_template = 0;
  data.max_body_sentences = 6;
  PairSplit split = generate_pairs(data);
  std::vector<TextPair> train;
  for (const auto& p : split.train) train.push_back({p.source, p.target});
  FitOptions fit;
  fit.summary.m = 8;
  FitReport report;
  auto maps = fit_maps(model, train, fit, report);
  return {std::move(split), std::move(maps)};
}

TEST(Evaluation, ColdEquivalentMethodsAreExactlyCold) {
  const Model& model = stories260k();
  auto [split, maps] = small_case(model);
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  EvalOptions o;
  o.warm_start_off = true;
  o.timing_repeats = 1;
  o.quality_tokens = 4;
  o.blend_recompute_percent = 100;  // every prefix position recomputed: the blend is the target's own cache
  auto result = evaluate(model, split.test, {}, {*maps}, o);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->requests.size(), split.test.size());
  for (const auto& r : result->requests) {
    EXPECT_FALSE(r.hit);
    for (const char* name : {"served", "prefix-cache", "neighbour-kv-blend"}) {
      const MethodOutcome& m = method(r, name);
      EXPECT_EQ(m.kl_method_cold, 0.0) << name;
      EXPECT_EQ(m.kl_cold_method, 0.0) << name;
      EXPECT_TRUE(m.top1_agree) << name;
      EXPECT_EQ(m.agree_tokens, 4) << name;
    }
    // An approximation is not exact (the last token alone sees no prompt at all).
    EXPECT_GT(method(r, "no-cache").kl_method_cold, 0.0);
  }
}

TEST(Evaluation, AMethodSubsetRunsOnlyThoseAndGivesTheSameNumbers) {
  const Model& model = stories260k();
  auto [split, maps] = small_case(model);
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  EvalOptions o;
  o.timing_repeats = 1;
  o.quality_tokens = 4;
  auto all = evaluate(model, split.test, {}, {*maps}, o);
  ASSERT_TRUE(all.ok()) << all.error().message;
  o.methods = {"no-cache", "projected", "oracle-summary:R=1"};  // run in kEvalMethods' order
  auto some = evaluate(model, split.test, {}, {*maps}, o);
  ASSERT_TRUE(some.ok()) << some.error().message;
  const std::vector<std::string> expected = {"projected:shared", "oracle-summary:R=1", "no-cache"};
  EXPECT_EQ(some->methods, expected);
  EXPECT_EQ(all->methods.size(), kEvalMethods.size());  // one maps file: "projected" is one method
  ASSERT_EQ(some->requests.size(), all->requests.size());
  for (size_t i = 0; i < some->requests.size(); ++i) {
    const RequestOutcome& r = some->requests[i];
    ASSERT_EQ(r.methods.size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      EXPECT_EQ(r.methods[k].method, expected[k]);
      const MethodOutcome& full = method(all->requests[i], expected[k]);
      EXPECT_EQ(r.methods[k].kl_method_cold, full.kl_method_cold) << expected[k];  // same computation, same bits
      EXPECT_EQ(r.methods[k].agree_tokens, full.agree_tokens) << expected[k];
    }
  }
  // A subset that reads no library summary (the oracles fit the target's own) fits none, and its requests still
  // report the same nearest neighbours and the same numbers.
  o.methods = {"oracle-summary", "oracle-summary:R=1"};
  auto oracles = evaluate(model, split.test, {}, {*maps}, o);
  ASSERT_TRUE(oracles.ok()) << oracles.error().message;
  EXPECT_GT(all->summary_bytes, 0);
  EXPECT_EQ(oracles->summary_bytes, 0);
  EXPECT_LT(oracles->library_bytes, all->library_bytes);
  ASSERT_EQ(oracles->requests.size(), all->requests.size());
  for (size_t i = 0; i < oracles->requests.size(); ++i) {
    const RequestOutcome& r = oracles->requests[i];
    EXPECT_EQ(r.similarity, all->requests[i].similarity);
    EXPECT_EQ(r.neighbour_kind, all->requests[i].neighbour_kind);
    ASSERT_EQ(r.methods.size(), 2u);
    for (const MethodOutcome& m : r.methods) {
      EXPECT_EQ(m.kl_method_cold, method(all->requests[i], m.method).kl_method_cold) << m.method;
      EXPECT_EQ(m.correct, method(all->requests[i], m.method).correct) << m.method;
    }
  }
  o.methods = {"oracle-summary:R=2"};
  EXPECT_TRUE(refused_with(evaluate(model, split.test, {}, {*maps}, o), "unknown method 'oracle-summary:R=2'"));
}

TEST(Evaluation, RefusesMapsOfAnotherShapeAndEmptyInput) {
  const Model& model = stories260k();
  WarmStartMaps wrong;
  wrong.projector = Projector(ProjectorForm::kIdentity, 3, 1, 8, 16);
  EXPECT_TRUE(refused_with(evaluate(model, {}, {}, {wrong}, EvalOptions{}), "maps were fitted for 3 layers"));
  EXPECT_TRUE(refused_with(evaluate(model, {}, {}, {}, EvalOptions{}), "no maps given"));
}

TEST(Evaluation, KlIsZeroForEqualLogitsAndPositiveOtherwise) {
  const std::vector<float> a = {1, 2, 3}, b = {3, 2, 1};
  EXPECT_EQ(kl_divergence(a, a), 0.0);
  EXPECT_GT(kl_divergence(a, b), 0.5);
  EXPECT_EQ(argmax(a), 2);
}

}  // namespace
}  // namespace pagoda::warmstart
