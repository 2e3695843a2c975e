// The evaluation data: deterministic for a seed, split by template, adversarial targets differ in meaning but
// share most words, prompt lengths spread from about 32 to 480 tokens on stories260K's tokenizer.
#include "warmstart/paraphrase_data.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "test_models.h"

namespace pagoda::warmstart {
namespace {

std::set<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

TEST(ParaphraseData, DeterministicAndSplitByTemplate) {
  DataOptions o;
  const PairSplit a = generate_pairs(o), b = generate_pairs(o);
  ASSERT_EQ(a.train.size(), b.train.size());
  for (size_t i = 0; i < a.train.size(); ++i) EXPECT_EQ(a.train[i].target, b.train[i].target);
  o.seed = 2;
  EXPECT_NE(generate_pairs(o).test[0].source, a.test[0].source);
  std::set<int> train_t, test_t;
  for (const auto& p : a.train) train_t.insert(p.template_id);
  for (const auto& p : a.test) test_t.insert(p.template_id);
  EXPECT_EQ(train_t.size(), size_t(kNumTemplates - kNumTestTemplates));
  EXPECT_EQ(test_t.size(), size_t(kNumTestTemplates));
  for (int t : test_t) EXPECT_FALSE(train_t.count(t));
}

TEST(ParaphraseData, AdversarialTargetsShareWordsButNotMeaning) {
  const PairSplit s = generate_pairs(DataOptions{});
  int adversarial = 0;
  for (const auto& p : s.test) {
    if (!p.adversarial) continue;
    ++adversarial;
    EXPECT_NE(p.source, p.target);
    const auto a = words(p.source), b = words(p.target);
    size_t common = 0;
    for (const auto& w : a) common += b.count(w);
    EXPECT_GE(common * 10, a.size() * 8) << p.source << " / " << p.target;  // >= 80% of the words shared
  }
  EXPECT_EQ(adversarial, kNumTestTemplates * DataOptions{}.adversarial_per_template);
}

TEST(ParaphraseData, PromptLengthsSpanThirtyTwoToFourHundredEightyTokens) {
  const Tokenizer& tok = stories260k().tokenizer();
  const PairSplit s = generate_pairs(DataOptions{});
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto* set : {&s.train, &s.test})
    for (const auto& p : *set)
      for (const auto* text : {&p.source, &p.target}) {
        const size_t n = tok.encode(*text, true).size();
        lo = std::min(lo, n);
        hi = std::max(hi, n);
      }
  EXPECT_GE(lo, 24u);
  EXPECT_LE(lo, 64u);
  EXPECT_GE(hi, 400u);
  EXPECT_LE(hi, 480u);
  std::printf("[data] prompt lengths %zu..%zu tokens\n", lo, hi);
}

}  // namespace
}  // namespace pagoda::warmstart
