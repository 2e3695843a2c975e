// pagoda on its default model, SmolLM2-135M-Instruct (Q4_1, fetched by scripts/fetch-model.sh), against llama.cpp
// da46e59 (tests/golden/data/, made by bench/llama_golden/make_goldens.sh; README there):
//   - the tokenizer (smollm pre-tokenizer) on llama.cpp's tokenizer test texts, and the golden prompts' ids;
//   - teacher-forced top-5 logits and free-running greedy tokens, under the legacy-quant rule of
//     ../shared/golden/quant/README.md (llama.cpp quantizes activations: bounds on the logits' max and mean
//     deviation, and a divergence only where llama.cpp's own margin is a near-tie), with bounds calibrated on
//     llama.cpp against itself (below);
//   - Gate 0: concurrent requests through the paged engine give the single-sequence path's tokens and logits,
//     bitwise, in the f16 (default) and f32 KV caches.
// The model is part of the test set-up: when it is missing the tests fail and say how to fetch it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "engine_reference.h"
#include "golden_jsonl.h"
#include "golden_shared.h"
#include "model/model.h"
#include "vocab_vectors.h"

namespace pagoda {
namespace {

const std::string kSource = PAGODA_SOURCE_DIR;
const std::string kModel = kSource + "/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kGoldens = kSource + "/tests/golden/data/smollm2-135m-instruct-q4_1-greedy.jsonl";

// The legacy-quant rule of ../shared/golden/quant/README.md with this file family's bounds: a 30-layer model
// amplifies any rounding difference, and llama.cpp itself, run with an F16 KV cache, differs from its own F32-KV
// goldens by max 1.91 / mean 0.176 and diverges at margins up to 0.72 (tests/golden/data/README.md). Bounds about
// 1.5x pagoda's measured 1.96 / 0.165 (and above llama.cpp's own margins).
constexpr float kMaxDiff = 3.0f, kMeanDiff = 0.25f, kNearTie = 0.8f;

class SmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kModel)) return;
    auto m = Model::load(kModel);
    if (m.ok()) model_ = std::move(*m).release();
    cases_ = new std::vector<GoldenCase>(load_golden_jsonl(kGoldens));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete cases_;
    model_ = nullptr;
    cases_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(model_, nullptr) << kModel << " is missing or does not load: run `bash scripts/fetch-model.sh`";
    ASSERT_EQ(cases_->size(), 18u) << kGoldens;
  }
  static Model* model_;
  static std::vector<GoldenCase>* cases_;
};
Model* SmolLM2::model_ = nullptr;
std::vector<GoldenCase>* SmolLM2::cases_ = nullptr;

TEST_F(SmolLM2, TokenizerMatchesLlamaCppOnItsTestTexts) {
  // llama.cpp's own tokenizer test texts (the llama-bpe set: unicode, whitespace runs, digits, contractions, code),
  // tokenized by llama.cpp with this model's vocabulary.
  const auto cases = read_vectors(kShared + "/vocab/ggml-vocab-llama-bpe.gguf.inp",
                                  kSource + "/tests/golden/data/smollm2-tokenizer.out");
  ASSERT_GE(cases.size(), 40u);
  for (const auto& c : cases)
    EXPECT_EQ(model_->tokenizer().encode(c.text, /*add_special=*/false, /*parse_special=*/false), c.ids) << c.text;
}

TEST_F(SmolLM2, GoldenPromptsTokenizeAsLlamaCpp) {
  for (const GoldenCase& c : *cases_)
    EXPECT_EQ(model_->tokenizer().encode(c.prompt, /*add_special=*/true, /*parse_special=*/true), c.prompt_ids)
        << c.prompt;
}

TEST_F(SmolLM2, TeacherForcedLogitsWithinTheLegacyQuantBounds) {
  ThreadPool pool(2);
  SequenceRunner runner(*model_, pool, 1024, KvDtype::kF32);  // the goldens are compared in f32
  float worst = 0.0f;
  double sum = 0.0;
  int64_t count = 0;
  for (const GoldenCase& c : *cases_) {
    runner.reset();
    auto logits = runner.eval(c.prompt_ids);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    for (const GoldenStep& s : c.steps) {
      for (const auto& [id, expected] : s.top) {
        const float diff = std::fabs((*logits)[id] - expected);
        worst = std::max(worst, diff);
        sum += diff;
        ++count;
      }
      const int32_t forced = s.top[0].first;
      logits = runner.eval(std::span<const int32_t>(&forced, 1));
      ASSERT_TRUE(logits.ok());
    }
  }
  const double mean = sum / count;
  std::printf("[smollm2] teacher forced: %lld logits, max abs diff %.4f, mean %.4f\n", static_cast<long long>(count),
              worst, mean);
  RecordProperty("max_abs_logit_diff", std::to_string(worst));
  RecordProperty("mean_abs_logit_diff", std::to_string(mean));
  EXPECT_LE(worst, kMaxDiff);
  EXPECT_LE(mean, kMeanDiff);
}

TEST_F(SmolLM2, GreedyOutputDivergesOnlyAtNearTies) {
  ThreadPool pool(2);
  SequenceRunner runner(*model_, pool, 1024, KvDtype::kF32);
  int agreed = 0, diverged = 0;
  for (const GoldenCase& c : *cases_) {
    runner.reset();
    auto logits = runner.eval(c.prompt_ids);
    ASSERT_TRUE(logits.ok());
    for (size_t s = 0; s < c.steps.size(); ++s) {
      const auto& top = c.steps[s].top;
      const int32_t next = Sampler::argmax(*logits);
      if (next != top[0].first) {
        const float margin = top[0].second - top[1].second;
        EXPECT_LT(margin, kNearTie) << c.prompt << ": diverges at step " << s << " where llama.cpp's margin is "
                                    << margin;
        ++diverged;
        break;
      }
      ++agreed;
      logits = runner.eval(std::span<const int32_t>(&next, 1));
      ASSERT_TRUE(logits.ok());
    }
  }
  std::printf("[smollm2] greedy: %d of %zu steps agreed, %d prompts diverged (each at a near-tie)\n", agreed,
              cases_->size() * 64, diverged);
  RecordProperty("greedy_steps_agreed", agreed);
}

// Gate 0 on a real model: the golden prompts and shorter cuts of them, all at once through the engine (chunked
// prefill, shared ChatML system prefix from the cache, block size 16), against each alone.
void expect_engine_matches_single(const Model& model, const std::vector<GoldenCase>& cases, KvDtype dtype) {
  std::vector<GenerationRequest> reqs;
  for (size_t i = 0; i < cases.size(); ++i) {
    GenerationRequest r;
    r.id = std::to_string(i);
    r.prompt = cases[i].prompt_ids;
    if (i % 3 == 2 && r.prompt.size() > 6) r.prompt.resize(r.prompt.size() - 3);
    r.max_tokens = 8 + static_cast<int64_t>(i % 5) * 6;
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    reqs.push_back(std::move(r));
  }
  EngineConfig c;
  c.kv_cache_dtype = dtype;
  c.block_size = 16;
  c.num_blocks = 256;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 48;
  c.num_threads = 2;
  c.watermark_blocks = 0;
  c.model_id = "smollm2";
  auto engine = Engine::create(model, c);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back((*engine)->submit(r));
  std::vector<SequenceOutput> got(reqs.size());
  for (int step = 0; (*engine)->step(); ++step) {
    for (size_t i = 0; i < reqs.size(); ++i) drain_stream(*streams[i], got[i]);
    ASSERT_LT(step, 100000) << "the engine did not finish";
  }
  for (size_t i = 0; i < reqs.size(); ++i) drain_stream(*streams[i], got[i]);
  const size_t n_vocab = model.hparams().n_vocab;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const SequenceOutput ref = greedy_single_sequence(model, reqs[i].prompt, reqs[i].max_tokens, 512, dtype);
    ASSERT_NE(got[i].finish, FinishReason::kError) << got[i].error;
    ASSERT_EQ(got[i].ids, ref.ids) << "request " << i;
    for (size_t s = 0; s < ref.ids.size(); ++s)
      ASSERT_EQ(0, std::memcmp(got[i].logits[s].data(), ref.logits[s].data(), n_vocab * sizeof(float)))
          << "request " << i << " step " << s << ": logits differ from the single-sequence path";
  }
  EXPECT_GT((*engine)->stats().blocks.prefix_hit_tokens, 0) << "the shared system turn comes from the prefix cache";
}

TEST_F(SmolLM2, EngineMatchesSingleSequenceBitwiseF16Kv) { expect_engine_matches_single(*model_, *cases_, KvDtype::kF16); }
TEST_F(SmolLM2, EngineMatchesSingleSequenceBitwiseF32Kv) { expect_engine_matches_single(*model_, *cases_, KvDtype::kF32); }

}  // namespace
}  // namespace pagoda
