// pagoda against llama.cpp's own greedy decode of stories260K (../shared/golden/stories260K-greedy.jsonl):
// prompt tokenization, teacher-forced logits at every step, and free-running greedy generation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "golden_jsonl.h"
#include "golden_shared.h"
#include "model/model.h"

namespace pagoda {
namespace {

constexpr float kLogitTolerance = 1e-3f;

class Stories260K : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::load(kShared + "/models/stories260K.gguf");
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = std::move(*m).release();
    cases_ = new std::vector<GoldenCase>(load_golden_jsonl(kShared + "/golden/stories260K-greedy.jsonl"));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete cases_;
  }
  static Model* model_;
  static std::vector<GoldenCase>* cases_;
};
Model* Stories260K::model_ = nullptr;
std::vector<GoldenCase>* Stories260K::cases_ = nullptr;

TEST_F(Stories260K, HasAllGoldenCases) {
  ASSERT_EQ(cases_->size(), 12u);
  for (const auto& c : *cases_) EXPECT_EQ(c.steps.size(), 64u) << c.prompt;
}

TEST_F(Stories260K, PromptTokensMatchLlamaCpp) {
  for (const auto& c : *cases_) EXPECT_EQ(model_->tokenizer().encode(c.prompt, true, true), c.prompt_ids) << c.prompt;
}

TEST_F(Stories260K, TeacherForcedLogitsMatchEveryStep) {
  ThreadPool pool(2);
  SequenceRunner runner(*model_, pool, 0, KvDtype::kF32);
  for (const auto& c : *cases_) {
    runner.reset();
    auto logits = runner.eval(c.prompt_ids);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    float worst = 0.0f;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      for (const auto& [id, expected] : c.steps[s].top) {
        const float got = (*logits)[id];
        worst = std::max(worst, std::fabs(got - expected));
        EXPECT_NEAR(got, expected, kLogitTolerance) << "'" << c.prompt << "' step " << s << " token " << id;
      }
      const int32_t forced = c.steps[s].top[0].first;
      logits = runner.eval(std::span<const int32_t>(&forced, 1));
      ASSERT_TRUE(logits.ok()) << logits.error().message;
    }
    RecordProperty("max_abs_logit_error_" + std::to_string(&c - cases_->data()), std::to_string(worst));
  }
}

TEST_F(Stories260K, FreeRunningGreedyReproducesTokensUpToFirstNearTie) {
  ThreadPool pool(2);
  SequenceRunner runner(*model_, pool, 0, KvDtype::kF32);
  for (const auto& c : *cases_) {
    runner.reset();
    auto logits = runner.eval(c.prompt_ids);
    ASSERT_TRUE(logits.ok());
    size_t compared = 0;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      const auto& top = c.steps[s].top;
      if (top[0].second - top[1].second < kNearTieMargin) break;  // after a near-tie either choice is correct
      const int32_t next = Sampler::argmax(*logits);
      ASSERT_EQ(next, top[0].first) << "'" << c.prompt << "' diverges at step " << s;
      ++compared;
      logits = runner.eval(std::span<const int32_t>(&next, 1));
      ASSERT_TRUE(logits.ok());
    }
    EXPECT_GT(compared, 0u) << c.prompt;
  }
}

TEST_F(Stories260K, PrefillEqualsTokenByTokenDecodeBitwise) {
  // The same tokens fed at once or one at a time give bitwise identical logits (batch invariance).
  ThreadPool pool(2);
  SequenceRunner batched(*model_, pool, 0, KvDtype::kF32), stepwise(*model_, pool, 0, KvDtype::kF32);
  const auto& ids = (*cases_)[0].prompt_ids;
  auto all = batched.eval(ids, /*all_logits=*/true);
  ASSERT_TRUE(all.ok());
  std::vector<float> all_copy(all->begin(), all->end());
  const size_t n_vocab = model_->hparams().n_vocab;
  for (size_t t = 0; t < ids.size(); ++t) {
    auto one = stepwise.eval(std::span<const int32_t>(&ids[t], 1));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(0, std::memcmp(one->data(), all_copy.data() + t * n_vocab, n_vocab * sizeof(float))) << "token " << t;
  }
}

TEST_F(Stories260K, ThreadCountDoesNotChangeLogits) {
  ThreadPool one(1), three(3);
  SequenceRunner a(*model_, one, 0, KvDtype::kF32), b(*model_, three, 0, KvDtype::kF32);
  const auto& ids = (*cases_)[1].prompt_ids;
  auto la = a.eval(ids);
  ASSERT_TRUE(la.ok());
  std::vector<float> copy(la->begin(), la->end());
  auto lb = b.eval(ids);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ(0, std::memcmp(copy.data(), lb->data(), copy.size() * sizeof(float)));
}

}  // namespace
}  // namespace pagoda
