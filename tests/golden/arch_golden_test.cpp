// Every supported family against llama.cpp's greedy decodes of its small seeded model (../shared/models/arch/,
// goldens in ../shared/golden/arch/<arch>-greedy.jsonl): prompt tokens, teacher-forced top-5 logits at every step
// (1e-3; 2e-2 for gpt2 and gptneox, whose GELU llama.cpp reads from an F16 table while pagoda computes it, see
// docs/architectures.md), free-running greedy tokens up to the first near-tie, and batch invariance. Each model is
// loaded from both twins: the GGUF file and the Hugging Face folder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "golden_jsonl.h"
#include "golden_shared.h"
#include "model/model.h"

namespace pagoda {
namespace {

std::vector<GoldenCase> load_golden(const std::string& arch) {
  return load_golden_jsonl(kShared + "/golden/arch/" + arch + "-greedy.jsonl");
}

struct ArchCase {
  const char* arch;
  const char* twin;  // "gguf", "hf" (the Hugging Face folder) or "hf-bf16" (the same values stored as BF16)
  float tolerance;
};
void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.arch << "/" << c.twin; }

std::string model_path(const ArchCase& c) {
  return kShared + "/models/arch/" + c.arch + (std::string(c.twin) == "gguf" ? ".gguf" : "-" + std::string(c.twin));
}

class ArchGolden : public ::testing::TestWithParam<ArchCase> {};

TEST_P(ArchGolden, MatchesLlamaCpp) {
  const ArchCase& c = GetParam();
  auto model = Model::load(model_path(c));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const Model& m = **model;
  EXPECT_EQ(m.hparams().arch, c.arch);
  const auto cases = load_golden(c.arch);
  ASSERT_EQ(cases.size(), 6u);
  ThreadPool pool(2);
  SequenceRunner runner(m, pool, 0, KvDtype::kF32);
  float worst = 0.0f;
  int greedy_steps = 0;
  for (const auto& g : cases) {
    EXPECT_EQ(m.tokenizer().encode(g.prompt, true, true), g.prompt_ids) << g.prompt;
    // Teacher forced: llama.cpp's tokens, its top-5 logits at every step.
    runner.reset();
    auto logits = runner.eval(g.prompt_ids);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    for (size_t s = 0; s < g.steps.size(); ++s) {
      for (const auto& [id, expected] : g.steps[s].top) {
        const float got = (*logits)[id];
        worst = std::max(worst, std::fabs(got - expected));
        EXPECT_NEAR(got, expected, c.tolerance) << "'" << g.prompt << "' step " << s << " token " << id;
      }
      const int32_t forced = g.steps[s].top[0].first;
      logits = runner.eval(std::span<const int32_t>(&forced, 1));
      ASSERT_TRUE(logits.ok()) << logits.error().message;
    }
    // Free running: the same tokens up to the first near-tie.
    runner.reset();
    logits = runner.eval(g.prompt_ids);
    ASSERT_TRUE(logits.ok());
    for (size_t s = 0; s < g.steps.size(); ++s) {
      const auto& top = g.steps[s].top;
      if (top[0].second - top[1].second < kNearTieMargin) break;
      const int32_t next = Sampler::argmax(*logits);
      ASSERT_EQ(next, top[0].first) << "'" << g.prompt << "' diverges at step " << s;
      ++greedy_steps;
      logits = runner.eval(std::span<const int32_t>(&next, 1));
      ASSERT_TRUE(logits.ok());
    }
  }
  EXPECT_GT(greedy_steps, 0);
  std::printf("[arch] %-8s %-4s max |logit - llama.cpp| %.2e, greedy steps agreed %d\n", c.arch, c.twin, worst,
              greedy_steps);
}

TEST_P(ArchGolden, PrefillEqualsTokenByTokenDecodeBitwise) {
  const ArchCase& c = GetParam();
  auto model = Model::load(model_path(c));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const auto cases = load_golden(c.arch);
  ASSERT_FALSE(cases.empty());
  ThreadPool pool(2);
  SequenceRunner batched(**model, pool, 0, KvDtype::kF32), stepwise(**model, pool, 0, KvDtype::kF32);
  const auto& ids = cases[0].prompt_ids;
  auto all = batched.eval(ids, /*all_logits=*/true);
  ASSERT_TRUE(all.ok());
  std::vector<float> all_copy(all->begin(), all->end());
  const size_t n_vocab = (*model)->hparams().n_vocab;
  for (size_t t = 0; t < ids.size(); ++t) {
    auto one = stepwise.eval(std::span<const int32_t>(&ids[t], 1));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(0, std::memcmp(one->data(), all_copy.data() + t * n_vocab, n_vocab * sizeof(float))) << "token " << t;
  }
}

// The two twins hold the same model: identical logits, bitwise where the layout is the same. Llama's folder is read
// with NeoX pairing on unpermuted Q/K rows, which sums the attention dot products in another order: within 5e-5 (logits of ~25: ~1e-6 relative).
class TwinsAgree : public ::testing::TestWithParam<const char*> {};

TEST_P(TwinsAgree, SameLogitsFromGgufAndFolder) {
  const std::string arch = GetParam();
  auto gguf = Model::load(kShared + "/models/arch/" + arch + ".gguf");
  auto hf = Model::load(kShared + "/models/arch/" + arch + "-hf");
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  ThreadPool pool(2);
  SequenceRunner a(**gguf, pool, 0, KvDtype::kF32), b(**hf, pool, 0, KvDtype::kF32);
  float worst = 0.0f;
  for (const auto& g : load_golden(arch)) {
    a.reset();
    b.reset();
    auto la = a.eval(g.prompt_ids, /*all_logits=*/true);
    ASSERT_TRUE(la.ok());
    std::vector<float> copy(la->begin(), la->end());
    auto lb = b.eval(g.prompt_ids, /*all_logits=*/true);
    ASSERT_TRUE(lb.ok());
    ASSERT_EQ(copy.size(), lb->size());
    for (size_t i = 0; i < copy.size(); ++i) worst = std::max(worst, std::fabs(copy[i] - (*lb)[i]));
  }
  if (arch == "llama")
    EXPECT_LE(worst, 5e-5f);
  else
    EXPECT_EQ(worst, 0.0f);
  std::printf("[twins] %-8s max |gguf - hf| %.2e\n", arch.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Archs, TwinsAgree, ::testing::Values("llama", "qwen2", "qwen3", "phi3", "gpt2", "gptneox"));

std::string case_name(const ::testing::TestParamInfo<ArchCase>& info) {
  std::string name = std::string(info.param.arch) + "_" + info.param.twin;
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Twins, ArchGolden,
                         ::testing::Values(ArchCase{"llama", "gguf", 1e-3f}, ArchCase{"llama", "hf", 1e-3f},
                                           ArchCase{"llama", "hf-bf16", 1e-3f}, ArchCase{"qwen2", "gguf", 1e-3f}, ArchCase{"qwen2", "hf", 1e-3f},
                                           ArchCase{"qwen3", "gguf", 1e-3f}, ArchCase{"qwen3", "hf", 1e-3f}, ArchCase{"phi3", "gguf", 1e-3f}, ArchCase{"phi3", "hf", 1e-3f},
                                           ArchCase{"gpt2", "gguf", 2e-2f}, ArchCase{"gpt2", "hf", 2e-2f}, ArchCase{"gptneox", "gguf", 2e-2f}, ArchCase{"gptneox", "hf", 2e-2f}),
                         case_name);

}  // namespace
}  // namespace pagoda
