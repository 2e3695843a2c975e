#include "anchorbench/memory_task.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

namespace pagoda::anchorbench {
namespace {

TEST(MemoryTask, DefaultSizeMeetsTheIssue) {
  const MemoryTask t = make_memory_task(1, 20, 10, 200);
  EXPECT_EQ(t.anchors.size(), 20u);
  EXPECT_EQ(t.questions.size(), 200u);
  EXPECT_EQ(t.distractors.size(), 200u);
  int counterfactual = 0;
  for (const auto& q : t.questions) counterfactual += q.kind == "counterfactual";
  EXPECT_EQ(counterfactual, 40);
}

TEST(MemoryTask, SameSeedSameTaskOtherSeedOtherTask) {
  const MemoryTask a = make_memory_task(7, 20, 10, 50), b = make_memory_task(7, 20, 10, 50),
                   c = make_memory_task(8, 20, 10, 50);
  ASSERT_EQ(a.anchors.size(), b.anchors.size());
  for (size_t i = 0; i < a.anchors.size(); ++i) EXPECT_EQ(a.anchors[i].text, b.anchors[i].text);
  for (size_t i = 0; i < a.questions.size(); ++i) EXPECT_EQ(a.questions[i].answer, b.questions[i].answer);
  EXPECT_EQ(a.distractors, b.distractors);
  int differ = 0;
  for (size_t i = 0; i < a.anchors.size(); ++i) differ += a.anchors[i].text != c.anchors[i].text;
  EXPECT_GT(differ, 15);
}

TEST(MemoryTask, EveryAnswerIsInItsAnchorAndCounterfactualsContradictTheTruth) {
  for (uint64_t seed : {1, 2, 3, 99}) {
    const MemoryTask t = make_memory_task(seed, 30, 10, 100);
    std::map<std::string, int32_t> capital_question_owner;  // question text -> anchor
    std::set<std::string> names, cities;
    for (const auto& q : t.questions) {
      ASSERT_GE(q.anchor, 0);
      ASSERT_LT(q.anchor, 30);
      EXPECT_TRUE(answer_matches(t.anchors[q.anchor].text, q.answer)) << q.question << " -> " << q.answer;
      if (q.kind == "counterfactual") {
        EXPECT_FALSE(q.prior_answer.empty());
        EXPECT_NE(normalise_answer(q.answer), normalise_answer(q.prior_answer)) << q.question;
        // No other anchor asks about the same country: one right answer in the whole task.
        auto [it, fresh] = capital_question_owner.emplace(q.question, q.anchor);
        EXPECT_TRUE(fresh || it->second == q.anchor) << q.question;
      } else {
        EXPECT_EQ(q.kind, "user");
        EXPECT_TRUE(q.prior_answer.empty());
      }
      if (q.fact == "name") names.insert(q.answer);
      if (q.fact == "city") cities.insert(q.answer);
    }
    EXPECT_EQ(names.size(), 30u);   // made-up first names drawn without replacement
    EXPECT_EQ(cities.size(), 30u);  // so are the cities
    // No distractor states a swapped country's capital (that would contradict the anchor).
    for (const auto& d : t.distractors)
      for (const auto& [question, anchor] : capital_question_owner) {
        const std::string country = question.substr(std::string("What is the capital of ").size());
        EXPECT_EQ(d.find("capital of " + country.substr(0, country.size() - 1) + " "), std::string::npos) << d;
      }
  }
}

TEST(MemoryTask, RejectsSizesItCannotMake) {
  EXPECT_THROW(make_memory_task(1, 0, 10, 0), std::invalid_argument);
  EXPECT_THROW(make_memory_task(1, 31, 10, 0), std::invalid_argument);
  EXPECT_THROW(make_memory_task(1, 5, 11, 0), std::invalid_argument);
  EXPECT_THROW(make_memory_task(1, 5, 0, 0), std::invalid_argument);
  EXPECT_THROW(make_memory_task(1, 5, 5, -1), std::invalid_argument);
  EXPECT_EQ(make_memory_task(1, 5, 3, 0).questions.size(), 15u);
}

TEST(MemoryTask, AnswerMatchingIsNormalisedAndWholeWord) {
  EXPECT_EQ(normalise_answer("  Your NAME is Aurelio!  "), "your name is aurelio");
  EXPECT_TRUE(answer_matches("Your name is Aurelio.", "Aurelio"));
  EXPECT_TRUE(answer_matches("you're allergic to BEE-stings", "bee stings"));
  EXPECT_TRUE(answer_matches("Mexico City.", "Mexico City"));
  EXPECT_FALSE(answer_matches("Lyonnais cooking", "Lyon"));
  EXPECT_FALSE(answer_matches("the capital is Pari", "Paris"));
  EXPECT_FALSE(answer_matches("anything", ""));
  EXPECT_FALSE(answer_matches("", "Paris"));
}

}  // namespace
}  // namespace pagoda::anchorbench
