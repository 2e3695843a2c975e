// pagoda against llama.cpp's greedy decodes of 17 quantized files (../shared/golden/quant/, whose README sets the
// fair rule: llama.cpp quantizes activations too, so per file family a bound on the teacher-forced top-5 logits
// (max and mean absolute difference) and a near-tie margin T for where free-running greedy output may diverge).
// Every measured deviation is printed, for docs/PERFORMANCE.md and the report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "golden_shared.h"
#include "model/model.h"

namespace pagoda {
namespace {

struct Family {
  float max_diff, mean_diff, near_tie;
};
constexpr Family kLegacySynth{0.30f, 0.04f, 0.30f};  // synth-q, 32-element block types
constexpr Family kKQuantSynth{0.40f, 0.06f, 0.35f};  // synth-q, K-quant mixes and IQ4_XS
constexpr Family kStories{0.65f, 0.06f, 0.45f};      // stories260K-*

struct QuantCase {
  const char* name;
  Family family;
};

void PrintTo(const QuantCase& c, std::ostream* os) { *os << c.name; }

struct Step {
  std::vector<std::pair<int32_t, float>> top;  // top-5 (id, logit), best first
};
struct Prompt {
  std::vector<int32_t> ids;
  std::vector<Step> steps;
};

std::vector<Prompt> load(const std::string& path) {
  std::vector<Prompt> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    Prompt p;
    p.ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    for (const auto& s : j.at("steps")) {
      Step step;
      for (const auto& t : s.at("top")) step.top.emplace_back(t.at(0).get<int32_t>(), t.at(1).get<float>());
      p.steps.push_back(std::move(step));
    }
    out.push_back(std::move(p));
  }
  return out;
}

class QuantGolden : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantGolden, LogitsAndGreedyOutputWithinTheFamilyBounds) {
  const QuantCase& c = GetParam();
  auto model = Model::load(kShared + "/models/quant/" + c.name + ".gguf");
  ASSERT_TRUE(model.ok()) << model.error().message;
  const std::vector<Prompt> prompts = load(kShared + "/golden/quant/" + c.name + "-greedy.jsonl");
  ASSERT_EQ(prompts.size(), 6u);
  ThreadPool pool(2);
  SequenceRunner runner(**model, pool, 0, KvDtype::kF32);  // the goldens are compared in f32

  // Teacher forced: feed llama.cpp's greedy tokens, compare the recorded top-5 logits at every step.
  float worst = 0.0f;
  double sum = 0.0;
  int64_t count = 0;
  for (const Prompt& p : prompts) {
    runner.reset();
    auto logits = runner.eval(p.ids);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    for (const Step& s : p.steps) {
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
  EXPECT_LE(worst, c.family.max_diff) << c.name;
  EXPECT_LE(mean, c.family.mean_diff) << c.name;

  // Free running: the same tokens until the first divergence, which must fall on a near-tie of llama.cpp's.
  int agreed = 0, diverged = 0;
  for (const Prompt& p : prompts) {
    runner.reset();
    auto logits = runner.eval(p.ids);
    ASSERT_TRUE(logits.ok());
    for (size_t s = 0; s < p.steps.size(); ++s) {
      const auto& top = p.steps[s].top;
      const int32_t next = Sampler::argmax(*logits);
      if (next != top[0].first) {
        const float margin = top[0].second - top[1].second;
        EXPECT_LT(margin, c.family.near_tie) << c.name << ": diverges at step " << s << " where llama.cpp's margin is "
                                             << margin;
        ++diverged;
        break;
      }
      ++agreed;
      logits = runner.eval(std::span<const int32_t>(&next, 1));
      ASSERT_TRUE(logits.ok());
    }
  }
  std::printf("[quant] %-22s max %.4f  mean %.4f  greedy steps agreed %d of %d, %d prompts diverged\n", c.name, worst,
              mean, agreed, 6 * 64, diverged);
  RecordProperty("max_abs_logit_diff", std::to_string(worst));
  RecordProperty("mean_abs_logit_diff", std::to_string(mean));
}

INSTANTIATE_TEST_SUITE_P(
    Files, QuantGolden,
    ::testing::Values(QuantCase{"synth-q-Q8_0", kLegacySynth}, QuantCase{"synth-q-Q4_0", kLegacySynth},
                      QuantCase{"synth-q-Q4_1", kLegacySynth}, QuantCase{"synth-q-Q5_0", kLegacySynth},
                      QuantCase{"synth-q-Q5_1", kLegacySynth}, QuantCase{"synth-q-IQ4_NL", kLegacySynth},
                      QuantCase{"synth-q-Q2_K", kKQuantSynth}, QuantCase{"synth-q-Q3_K_M", kKQuantSynth},
                      QuantCase{"synth-q-Q4_K_S", kKQuantSynth}, QuantCase{"synth-q-Q4_K_M", kKQuantSynth},
                      QuantCase{"synth-q-Q5_K_M", kKQuantSynth}, QuantCase{"synth-q-Q6_K", kKQuantSynth},
                      QuantCase{"synth-q-IQ4_XS", kKQuantSynth}, QuantCase{"stories260K-Q8_0", kStories},
                      QuantCase{"stories260K-Q4_0", kStories}, QuantCase{"stories260K-Q4_K_M", kStories},
                      QuantCase{"stories260K-Q6_K", kStories}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

}  // namespace
}  // namespace pagoda
