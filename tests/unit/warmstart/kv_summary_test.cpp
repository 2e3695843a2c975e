// Compression and the slot forward: with one slot per prefix token the summary is the exact cache, so the warm
// logits equal the cold ones; with fewer slots they differ but stay a distribution; bad shapes are refused.
#include "warmstart/kv_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "refusal.h"
#include "test_models.h"
#include "warmstart/slot_forward.h"

namespace pagoda::warmstart {
namespace {

const Model& arch_model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& m = models[name];
  if (!m) {
    auto loaded = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/arch/" + name + ".gguf");
    EXPECT_TRUE(loaded.ok());
    m = std::move(*loaded);
  }
  return *m;
}

std::vector<int32_t> prompt_tokens(const Model& model) {
  return model.tokenizer().encode("Once upon a time, there was a little girl named Lily. She liked to play", true);
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

void check_exact_summary_reproduces_cold(const Model& model) {
  ThreadPool pool(1);
  TransformerWorkspace ws;
  const auto tokens = prompt_tokens(model);
  ASSERT_GT(tokens.size(), 4u);
  auto state = run_prompt(model, tokens, pool, ws);
  ASSERT_TRUE(state.ok()) << state.error().message;
  // m = prefix length and one reference position: every slot is one token at its own position.
  SummaryOptions o;
  o.m = state->n_tokens - 1;
  o.ref_positions = 1;
  auto summary = summarize_prefix(model.hparams(), *state, o);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  std::vector<float> warm;
  ASSERT_TRUE(slot_forward(model, tokens.back(), *summary, pool, ws, warm).ok());
  ASSERT_EQ(warm.size(), state->logits.size());
  EXPECT_LT(max_abs_diff(warm, state->logits), 2e-3);
  // The exact prefix as slots is the same thing without any fitting.
  std::vector<float> exact;
  ASSERT_TRUE(slot_forward(model, tokens.back(), exact_prefix_slots(model.hparams(), *state), pool, ws, exact).ok());
  EXPECT_LT(max_abs_diff(exact, state->logits), 1e-3);
  // Four slots: an approximation, not the cold logits, but finite.
  o.m = 4;
  o.ref_positions = 4;
  auto small = summarize_prefix(model.hparams(), *state, o);
  ASSERT_TRUE(small.ok());
  std::vector<float> approx;
  ASSERT_TRUE(slot_forward(model, tokens.back(), *small, pool, ws, approx).ok());
  for (float x : approx) ASSERT_TRUE(std::isfinite(x));
  EXPECT_GT(max_abs_diff(approx, state->logits), 1e-4);
}

TEST(KvSummary, ExactSummaryReproducesColdLogitsOnStories260K) { check_exact_summary_reproduces_cold(stories260k()); }
TEST(KvSummary, ExactSummaryReproducesColdLogitsWithLearnedPositions) {
  check_exact_summary_reproduces_cold(arch_model("gpt2"));
}
TEST(KvSummary, ExactSummaryReproducesColdLogitsWithNeoxPartialRotary) {
  check_exact_summary_reproduces_cold(arch_model("gptneox"));
}

TEST(KvSummary, RefusesAPromptShorterThanTheSlots) {
  const Model& model = stories260k();
  ThreadPool pool(1);
  TransformerWorkspace ws;
  const std::vector<int32_t> tokens = {1, 100, 200};
  auto state = run_prompt(model, tokens, pool, ws);
  ASSERT_TRUE(state.ok());
  SummaryOptions o;
  o.m = 16;
  auto s = summarize_prefix(model.hparams(), *state, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("too short"), std::string::npos);
}

TEST(KvSummary, SlotForwardRefusesAMismatchedSummary) {
  const Model& model = stories260k();
  ThreadPool pool(1);
  TransformerWorkspace ws;
  SlotCache wrong = SlotCache::empty_for(model.hparams(), 4);
  wrong.head_dim += 1;
  std::vector<float> logits;
  EXPECT_TRUE(refused_with(slot_forward(model, 1, wrong, pool, ws, logits), "does not match the model"));
}

}  // namespace
}  // namespace pagoda::warmstart
