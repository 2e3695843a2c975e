// The projector: fits recover a known linear relation, gamma -> infinity gives the identity, and shapes are checked.
#include "warmstart/projector.h"

#include <gtest/gtest.h>

#include "refusal.h"
#include "util/rng.h"

namespace pagoda::warmstart {
namespace {

SlotCache random_cache(Rng& rng, int64_t d, int64_t m) {
  SlotCache c;
  c.n_layer = 2;
  c.n_kv_heads = 2;
  c.head_dim = d;
  c.n_slots = m;
  c.rows.resize(static_cast<size_t>(2 * 2 * m * (2 * d + 1)));
  for (float& x : c.rows) x = static_cast<float>(rng.next_normal());
  return c;
}

// target = 0.5 * source + 0.25 elementwise: within both structured forms.
SlotCache related(const SlotCache& s) {
  SlotCache t = s;
  for (float& x : t.rows) x = 0.5f * x + 0.25f;
  return t;
}

TEST(Projector, BothFormsRecoverAnAffineRelation) {
  Rng rng(7);
  std::vector<SlotCache> src, tgt;
  for (int i = 0; i < 40; ++i) {
    src.push_back(random_cache(rng, 4, 8));
    tgt.push_back(related(src.back()));
  }
  std::vector<std::pair<const SlotCache*, const SlotCache*>> pairs;
  for (size_t i = 0; i < src.size(); ++i) pairs.emplace_back(&src[i], &tgt[i]);
  for (ProjectorForm form : {ProjectorForm::kShared, ProjectorForm::kBlockDiagonal}) {
    auto p = fit_projector(form, pairs, 1e-9);
    ASSERT_TRUE(p.ok()) << p.error().message;
    Rng fresh(99);
    SlotCache probe = random_cache(fresh, 4, 8);
    auto y = p->apply(probe);
    ASSERT_TRUE(y.ok());
    const SlotCache want = related(probe);
    for (size_t i = 0; i < want.rows.size(); ++i) ASSERT_NEAR(y->rows[i], want.rows[i], 1e-3) << to_string(form);
  }
  EXPECT_EQ(Projector(ProjectorForm::kShared, 2, 2, 4, 8).params_per_head(), 10 * 9);
  EXPECT_EQ(Projector(ProjectorForm::kBlockDiagonal, 2, 2, 4, 8).params_per_head(), 2 * 5 * 4 + 2);
}

// target = M * source with M a fixed slot permutation plus a blend: within the slot-mixing form only.
SlotCache mixed(const SlotCache& s) {
  SlotCache t = s;
  const int64_t m = s.n_slots, W = s.row_width();
  for (int64_t l = 0; l < s.n_layer; ++l)
    for (int64_t h = 0; h < s.n_kv_heads; ++h)
      for (int64_t j = 0; j < m; ++j)
        for (int64_t c = 0; c < W; ++c)
          t.head_rows(l, h)[j * W + c] =
              0.7f * s.head_rows(l, h)[((j + 1) % m) * W + c] + 0.3f * s.head_rows(l, h)[j * W + c];
  return t;
}

TEST(Projector, SlotMixingRecoversALinearMixOfSlots) {
  Rng rng(11);
  std::vector<SlotCache> src, tgt;
  for (int i = 0; i < 10; ++i) {
    src.push_back(random_cache(rng, 4, 8));
    tgt.push_back(mixed(src.back()));
  }
  std::vector<std::pair<const SlotCache*, const SlotCache*>> pairs;
  for (size_t i = 0; i < src.size(); ++i) pairs.emplace_back(&src[i], &tgt[i]);
  auto p = fit_projector(ProjectorForm::kSlotMixing, pairs, 1e-9);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->params_per_head(), 8 * 8);
  Rng fresh(5);
  const SlotCache probe = random_cache(fresh, 4, 8);
  auto y = p->apply(probe);
  ASSERT_TRUE(y.ok());
  const SlotCache want = mixed(probe);
  for (size_t i = 0; i < want.rows.size(); ++i) ASSERT_NEAR(y->rows[i], want.rows[i], 1e-3);
  // The per-coordinate forms cannot express a slot permutation: their best fit misses it.
  auto shared = fit_projector(ProjectorForm::kShared, pairs, 1e-9);
  ASSERT_TRUE(shared.ok());
  auto ys = shared->apply(probe);
  ASSERT_TRUE(ys.ok());
  double err = 0;
  for (size_t i = 0; i < want.rows.size(); ++i) err = std::max(err, double(std::abs(ys->rows[i] - want.rows[i])));
  EXPECT_GT(err, 0.1);
  // A huge ridge gives the identity here too.
  auto ident = fit_projector(ProjectorForm::kSlotMixing, pairs, 1e12);
  ASSERT_TRUE(ident.ok());
  auto yi = ident->apply(probe);
  ASSERT_TRUE(yi.ok());
  for (size_t i = 0; i < probe.rows.size(); ++i) ASSERT_NEAR(yi->rows[i], probe.rows[i], 1e-4);
}

TEST(Projector, AHugeRidgeGivesTheIdentity) {
  Rng rng(3);
  std::vector<SlotCache> src, tgt;
  for (int i = 0; i < 10; ++i) {
    src.push_back(random_cache(rng, 4, 8));
    tgt.push_back(related(src.back()));
  }
  std::vector<std::pair<const SlotCache*, const SlotCache*>> pairs;
  for (size_t i = 0; i < src.size(); ++i) pairs.emplace_back(&src[i], &tgt[i]);
  auto p = fit_projector(ProjectorForm::kShared, pairs, 1e12);
  ASSERT_TRUE(p.ok());
  auto y = p->apply(src[0]);
  ASSERT_TRUE(y.ok());
  for (size_t i = 0; i < y->rows.size(); ++i) ASSERT_NEAR(y->rows[i], src[0].rows[i], 1e-4);
}

// target = source + 0.5 c (every coordinate), where the prompts' embedding difference is c u: only a projector that
// reads the difference can know c.
TEST(Projector, TargetAwareReadsTheEmbeddingDifference) {
  Rng rng(21);
  const int64_t embd = 12;
  std::vector<float> u(embd);
  for (auto& x : u) x = static_cast<float>(rng.next_normal());
  auto shifted = [](const SlotCache& s, double c) {
    SlotCache t = s;
    for (float& x : t.rows) x += static_cast<float>(0.5 * c);
    return t;
  };
  std::vector<SlotCache> src, tgt;
  std::vector<std::vector<float>> deltas;
  for (int i = 0; i < 30; ++i) {
    const double c = rng.next_normal();
    src.push_back(random_cache(rng, 4, 8));
    tgt.push_back(shifted(src.back(), c));
    std::vector<float> d(embd);
    for (int64_t k = 0; k < embd; ++k) d[k] = static_cast<float>(c * u[k]);
    deltas.push_back(std::move(d));
  }
  std::vector<std::pair<const SlotCache*, const SlotCache*>> pairs;
  for (size_t i = 0; i < src.size(); ++i) pairs.emplace_back(&src[i], &tgt[i]);
  auto p = fit_projector(ProjectorForm::kTargetAware, pairs, 1e-9, deltas, 1);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->target_features(), 1);
  EXPECT_EQ(p->params_per_head(), (2 * 4 + 2 + 1) * (2 * 4 + 1));
  Rng fresh(8);
  const SlotCache probe = random_cache(fresh, 4, 8);
  std::vector<float> delta(embd);
  for (int64_t k = 0; k < embd; ++k) delta[k] = 1.5f * u[k];
  auto y = p->apply(probe, delta);
  ASSERT_TRUE(y.ok()) << y.error().message;
  const SlotCache want = shifted(probe, 1.5);
  for (size_t i = 0; i < want.rows.size(); ++i) ASSERT_NEAR(y->rows[i], want.rows[i], 1e-3);
  EXPECT_TRUE(refused_with(p->apply(probe), "needs the prompts' embedding difference"));  // the difference is required
  EXPECT_TRUE(refused_with(fit_projector(ProjectorForm::kTargetAware, pairs, 1e-9),  // and needed to fit
                           "needs one embedding difference per pair"));
}

TEST(Projector, RefusesMismatchedShapes) {
  Rng rng(1);
  SlotCache a = random_cache(rng, 4, 8), b = random_cache(rng, 4, 6);
  std::vector<std::pair<const SlotCache*, const SlotCache*>> pairs = {{&a, &b}};
  EXPECT_TRUE(refused_with(fit_projector(ProjectorForm::kShared, pairs, 1.0), "the pairs' summaries differ in shape"));
  EXPECT_TRUE(refused_with(fit_projector(ProjectorForm::kShared, {}, 1.0), "no pairs to fit"));
  Projector p(ProjectorForm::kShared, 2, 2, 4, 8);
  EXPECT_TRUE(refused_with(p.apply(b), "the summary's shape does not match the projector's"));
  EXPECT_TRUE(refused_with(parse_projector_form("dense"), "unknown projector form 'dense'"));
}

}  // namespace
}  // namespace pagoda::warmstart
