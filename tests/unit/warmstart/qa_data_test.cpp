// The question-answer data: deterministic, split by template, every prompt ends in its question's answer stub, a
// paraphrase's source states the target's answer, a near miss's source does not (but shares its words), the
// library's near-miss distractors differ from their target in the asked value only, and the answer rule.
#include "warmstart/qa_data.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "test_models.h"

namespace pagoda::warmstart {
namespace {

std::vector<std::string> qa_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool has_word(const std::string& text, const std::string& word) {
  for (const auto& w : qa_words(text))
    if (w == word || w == word + "." || w == word + "," || w == word + "'s") return true;
  return false;
}

TEST(QaData, DeterministicAndSplitByTemplate) {
  QaDataOptions o;
  const PairSplit a = generate_qa_pairs(o), b = generate_qa_pairs(o);
  ASSERT_EQ(a.test.size(), b.test.size());
  for (size_t i = 0; i < a.test.size(); ++i) EXPECT_EQ(a.test[i].target, b.test[i].target);
  ASSERT_EQ(a.distractors.size(), b.distractors.size());
  o.seed = 2;
  EXPECT_NE(generate_qa_pairs(o).test[0].source, a.test[0].source);
  std::set<int> train_t, test_t;
  for (const auto& p : a.train) train_t.insert(p.template_id);
  for (const auto& p : a.test) test_t.insert(p.template_id);
  EXPECT_EQ(train_t.size(), size_t(kNumQaTemplates - kNumQaTestTemplates));
  EXPECT_EQ(test_t.size(), size_t(kNumQaTestTemplates));
  for (int t : test_t) EXPECT_FALSE(train_t.count(t));
  EXPECT_EQ(a.test.size(), size_t(kNumQaTestTemplates * (o.instances_per_template + o.near_miss_per_template)));
}

TEST(QaData, PromptsEndInTheAnswerStubAndSourcesStateTheRightFact) {
  const PairSplit s = generate_qa_pairs(QaDataOptions{});
  int near_misses = 0;
  for (const auto* set : {&s.train, &s.test})
    for (const auto& p : *set) {
      ASSERT_FALSE(p.answer.empty());
      // Both prompts end with the same question and answer stub (no trailing period: the answer comes next).
      const size_t q = p.target.find("\nQuestion: ");
      ASSERT_NE(q, std::string::npos) << p.target;
      EXPECT_EQ(p.source.substr(p.source.find("\nQuestion: ")), p.target.substr(q));
      EXPECT_NE(p.target.back(), '.');
      EXPECT_TRUE(has_word(p.target.substr(0, q), p.answer)) << p.answer << " / " << p.target;
      if (!p.adversarial) {
        EXPECT_TRUE(has_word(p.source, p.answer)) << p.answer << " / " << p.source;
        continue;
      }
      ++near_misses;
      EXPECT_FALSE(has_word(p.source, p.answer)) << p.answer << " / " << p.source;
      const auto a = qa_words(p.source), b = qa_words(p.target);
      ASSERT_EQ(a.size(), b.size());  // the same wording, one value changed
      size_t same = 0;
      for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
      EXPECT_GE(same * 10, a.size() * 9);
    }
  EXPECT_EQ(near_misses, kNumQaTemplates * QaDataOptions{}.near_miss_per_template);
}

TEST(QaData, DistractorsAreNearMissesOfTargetsAndUnrelatedPrompts) {
  const PairSplit s = generate_qa_pairs(QaDataOptions{});
  int near = 0, unrelated = 0;
  for (const auto& d : s.distractors) {
    if (!d.near_miss) {
      ++unrelated;
      EXPECT_EQ(d.for_pair, -1);
      continue;
    }
    ++near;
    ASSERT_GE(d.for_pair, 0);
    const PromptPair& p = s.test[d.for_pair];
    EXPECT_FALSE(p.adversarial);
    EXPECT_FALSE(has_word(d.text, p.answer)) << d.text;
    const auto a = qa_words(d.text), b = qa_words(p.target);
    ASSERT_EQ(a.size(), b.size());
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    EXPECT_GE(differ, 1u);
    EXPECT_LE(differ, 3u);  // the value, where the fact and (for friends) a possessive mention it
  }
  const QaDataOptions o;
  EXPECT_EQ(near, kNumQaTestTemplates * o.instances_per_template);
  EXPECT_EQ(unrelated, static_cast<int>(s.test.size()));
}

TEST(QaData, PromptLengthsSpreadOnStories260KTokens) {
  const Tokenizer& tok = stories260k().tokenizer();
  const PairSplit s = generate_qa_pairs(QaDataOptions{});
  size_t lo = SIZE_MAX, hi = 0;
  for (const auto& p : s.test)
    for (const auto* text : {&p.source, &p.target}) {
      const size_t n = tok.encode(*text, true).size();
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
  EXPECT_GE(lo, 40u);
  EXPECT_LE(hi, 1000u);
  EXPECT_GE(hi, 2 * lo);
  std::printf("[qa data] prompt lengths %zu..%zu tokens (stories260K)\n", lo, hi);
}

TEST(QaData, AnswerRule) {
  EXPECT_TRUE(answer_matches(" Oslo.", "Oslo"));
  EXPECT_TRUE(answer_matches(" oslo, a city", "Oslo"));
  EXPECT_TRUE(answer_matches("\nOslo", "Oslo"));
  EXPECT_FALSE(answer_matches(" Oslofjord", "Oslo"));
  EXPECT_FALSE(answer_matches(" in Oslo", "Oslo"));
  EXPECT_FALSE(answer_matches("", "Oslo"));
  EXPECT_FALSE(answer_matches(" Oslo", ""));
  EXPECT_TRUE(answer_matches(" Pip!", "Pip"));
}

}  // namespace
}  // namespace pagoda::warmstart
