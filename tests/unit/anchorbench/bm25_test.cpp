#include "anchorbench/bm25.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pagoda::anchorbench {
namespace {

TEST(Bm25, WordsAreLowerCaseAlphanumericRunsWithoutStopWords) {
  EXPECT_EQ(Bm25Index::words("What is the capital of Japan?"), (std::vector<std::string>{"capital", "japan"}));
  EXPECT_EQ(Bm25Index::words("The user's B-12 dose"), (std::vector<std::string>{"user", "s", "b", "12", "dose"}));
}

TEST(Bm25, TheDocumentWithTheRareSharedWordRanksFirst) {
  const Bm25Index index({"The capital of France is Paris.", "The capital of Japan is Madrid.",
                         "The user lives in Lisbon.", "The capital of Spain is Madrid."});
  const auto hits = index.search("What is the capital of Japan?", 2);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].document, 1);
  EXPECT_GT(hits[0].score, hits[1].score);
  // Only documents sharing a word come back.
  const auto none = index.search("Where is my umbrella?", 3);
  EXPECT_TRUE(none.empty());
}

TEST(Bm25, ScoresFollowTheFormula) {
  // Two documents; "japan" in one: idf = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2; tf 1, |d| 2, mean 2.5.
  const Bm25Index index({"capital japan", "capital france spain"});
  const auto hits = index.search("japan", 5);
  ASSERT_EQ(hits.size(), 1u);
  const double k1 = 1.2, b = 0.75;
  const double expected = std::log(2.0) * (k1 + 1) / (1 + k1 * (1 - b + b * 2 / 2.5));
  EXPECT_NEAR(hits[0].score, expected, 1e-12);
}

TEST(Bm25, AllowedRestrictsTheSearchAndTiesGoToTheLowerIndex) {
  const Bm25Index index({"user lives in Oslo", "user lives in Lima", "user lives in Riga"});
  const auto all = index.search("where does the user live? lives", 3);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].document, 0);  // equal scores: index order
  EXPECT_EQ(all[1].document, 1);
  const auto only = index.search("user lives", 3, {0, 0, 1});
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].document, 2);
  EXPECT_TRUE(index.search("user", 0).empty());
}

}  // namespace
}  // namespace pagoda::anchorbench
