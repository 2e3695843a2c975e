// The anchor benchmark's texts (exact token lengths, distinct snippets, facts), its snippet store, and its mode names.
#include "anchorbench/bench_texts.h"

#include <gtest/gtest.h>

#include <set>

#include "anchorbench/anchor_bench.h"
#include "anchorbench/snippet_store.h"
#include "test_models.h"

namespace pagoda::anchorbench {
namespace {

TEST(BenchTexts, AnchorTextsHaveExactlyTheAskedTokenCount) {
  const Tokenizer& tok = stories260k().tokenizer();
  for (int32_t a : {2, 3, 8, 32, 64, 128, 512}) {
    const std::string text = anchor_text_of_length(tok, a, 7);
    EXPECT_EQ(static_cast<int32_t>(tok.encode(text, true, false).size()), a) << text;
    EXPECT_EQ(text, anchor_text_of_length(tok, a, 7)) << "not deterministic";
  }
  EXPECT_NE(anchor_text_of_length(tok, 32, 1), anchor_text_of_length(tok, 32, 2));
}

TEST(BenchTexts, SnippetsAreDistinctAndFactsNameTheirAnswer) {
  const auto snippets = snippet_texts(1000, 3);
  EXPECT_EQ(std::set<std::string>(snippets.begin(), snippets.end()).size(), 1000u);
  const auto facts = fact_probes(20);
  ASSERT_EQ(facts.size(), 20u);
  std::set<std::string> anchors;
  for (const auto& f : facts) {
    anchors.insert(f.anchor_text);
    EXPECT_NE(f.anchor_text.find(f.answer.substr(1)), std::string::npos) << f.anchor_text;
    EXPECT_EQ(f.answer[0], ' ');
    EXPECT_EQ(f.probes.size(), 2u);
  }
  EXPECT_EQ(anchors.size(), 20u);
}

TEST(SnippetStore, FindsEachSnippetByItsFirstSentence) {
  const Model& m = stories260k();
  auto texts = snippet_texts(200, 5);
  texts[17] = anchor_text_of_length(m.tokenizer(), 512, 9);  // a long memory is found by its first sentence too
  SnippetStore store(m, texts);
  EXPECT_EQ(first_sentence("Lily has a dog. It is red."), "Lily has a dog.");
  EXPECT_EQ(first_sentence("no dot"), "no dot");
  for (int32_t i : {0, 17, 99, 199}) {
    const auto hit = store.nearest(first_sentence(texts[i]));
    EXPECT_EQ(store.text(hit.index), texts[i]);  // an identical duplicate could only tie
    EXPECT_NEAR(hit.similarity, 1.0f, 1e-4f);
  }
}

TEST(BenchModes, NamesParseAndTextCachedMeansWarmAndEvicted) {
  auto modes = parse_bench_modes({"none", "text-cached", "anchor"});
  ASSERT_TRUE(modes.ok());
  ASSERT_EQ(modes->size(), 4u);
  EXPECT_EQ((*modes)[1], BenchMode::kTextCached);
  EXPECT_EQ((*modes)[2], BenchMode::kTextCachedEvicted);
  auto bad = parse_bench_modes({"anchors"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'anchors'"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::anchorbench
