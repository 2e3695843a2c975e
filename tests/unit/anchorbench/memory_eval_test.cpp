#include "anchorbench/memory_eval.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../test_models.h"

namespace pagoda::anchorbench {
namespace {

class MemoryEvalEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = BenchAnchorSigner::create(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf", stories260k());
    ASSERT_TRUE(s.ok()) << s.error().message;
    signer_ = std::make_unique<BenchAnchorSigner>(std::move(*s));
    options_.max_tokens = 8;
    options_.engine.kv_cache_bytes = uint64_t{32} << 20;
    options_.engine.num_threads = 1;
  }
  MemoryModeResult run(const MemoryMode& mode) {
    auto r = evaluate_memory_mode(stories260k(), chat_, *signer_, task_, mode, options_);
    EXPECT_TRUE(r.ok()) << mode.name << ": " << r.error().message;
    return r.ok() ? std::move(*r) : MemoryModeResult{};
  }
  const ChatPrompt chat_ = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  const MemoryTask task_ = make_memory_task(3, 2, 4, 10);
  std::unique_ptr<BenchAnchorSigner> signer_;
  MemoryEvalOptions options_;
};

void expect_same_replies(const MemoryModeResult& a, const MemoryModeResult& b) {
  ASSERT_EQ(a.answers.size(), b.answers.size());
  for (size_t i = 0; i < a.answers.size(); ++i) {
    EXPECT_EQ(a.answers[i].output, b.answers[i].output) << a.mode.name << " vs " << b.mode.name << " q" << i;
    EXPECT_EQ(a.answers[i].answer_logprob, b.answers[i].answer_logprob) << a.mode.name << " vs " << b.mode.name;
    EXPECT_EQ(a.answers[i].prompt_tokens, b.answers[i].prompt_tokens);
  }
}

// Gate 0 for chat: an anchor holding the templated system turn gives bitwise the text mode's replies.
TEST_F(MemoryEvalEngine, AnchorHoldingTheSystemTurnEqualsText) {
  const MemoryModeResult text = run({"text", "", {}});
  const MemoryModeResult system = run({"anchor-system", "", {}});
  ASSERT_EQ(text.answers.size(), 8u);
  expect_same_replies(text, system);
  EXPECT_GT(system.anchor_kv_bytes, 0);
  for (const auto& a : text.answers) {
    EXPECT_LT(a.answer_logprob, 0.0);
    EXPECT_TRUE(std::isfinite(a.answer_logprob));
  }
}

// A layer mask that shows the anchor to every layer is the anchor; hiding half the layers hides half its bytes.
TEST_F(MemoryEvalEngine, LayerMasksAndAnchorBytes) {
  const int64_t n_layer = stories260k().hparams().n_layer;
  const MemoryModeResult anchor = run({"anchor", "", {}});
  const MemoryModeResult all = run({"anchor-layers", "all", std::vector<uint8_t>(n_layer, 1)});
  expect_same_replies(anchor, all);
  EXPECT_EQ(all.anchor_kv_bytes_hidden, 0);
  std::vector<uint8_t> first(n_layer, 0);
  first[0] = 1;
  const MemoryModeResult one = run({"anchor-layers", "0", first});
  EXPECT_EQ(one.anchor_kv_bytes, anchor.anchor_kv_bytes);
  EXPECT_EQ(one.anchor_kv_bytes_hidden * n_layer, anchor.anchor_kv_bytes * (n_layer - 1));
}

TEST_F(MemoryEvalEngine, RagRetrievesAndNoneHasNoAnchor) {
  const MemoryModeResult rag = run({"rag", "", {}});
  EXPECT_EQ(rag.retrieval_hits.n, 8);
  EXPECT_GT(rag.retrieval_hits.hits, 0);  // "What is my favourite colour?" shares words with its fact
  const MemoryModeResult none = run({"none", "", {}});
  EXPECT_EQ(none.retrieval_hits.n, 0);
  EXPECT_EQ(none.anchor_kv_bytes, 0);
  EXPECT_LT(none.mean_prompt_tokens, rag.mean_prompt_tokens);
}

TEST_F(MemoryEvalEngine, RejectsUnknownModesAndBadMasks) {
  EXPECT_FALSE(evaluate_memory_mode(stories260k(), chat_, *signer_, task_, {"nonsense", "", {}}, options_).ok());
  EXPECT_FALSE(evaluate_memory_mode(stories260k(), chat_, *signer_, task_, {"anchor-layers", "x", {1}}, options_).ok());
}

}  // namespace
}  // namespace pagoda::anchorbench
