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

TEST(Evaluation, ColdEquivalentMethodsAreExactlyCold) {
  const Model& model = stories260k();
  DataOptions data;
  data.instances_per_template = 1;
  data.adversarial_per_template = 0;
  data.max_body_sentences = 6;
  const PairSplit split = generate_pairs(data);
  std::vector<TextPair> train;
  for (const auto& p : split.train) train.push_back({p.source, p.target});
  FitOptions fit;
  fit.summary.m = 8;
  FitReport report;
  auto maps = fit_maps(model, train, fit, report);
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
