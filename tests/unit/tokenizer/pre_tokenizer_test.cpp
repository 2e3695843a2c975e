#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

using Words = std::vector<std::string>;

Words split(const std::string& pre, const std::string& text) {
  auto config = pre_tokenizer_config(pre);
  EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message);
  if (!config.ok()) return {};
  auto p = PreTokenizer::create(*config);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  if (!p.ok()) return {};
  Words out;
  for (auto w : p->split(text)) out.emplace_back(w);
  return out;
}

TEST(PreTokenizerTest, Gpt2Words) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split("gpt-2", "I'm here, ok?"), (Words{"I", "'m", " here", ",", " ok", "?"}));
  // A whitespace run before a word leaves its last space to the word.
  EXPECT_EQ(split("gpt-2", "   Hello"), (Words{"  ", " Hello"}));
  EXPECT_EQ(split("gpt-2", "a  "), (Words{"a", "  "}));
  EXPECT_EQ(split("gpt-2", "\n\nb"), (Words{"\n", "\n", "b"}));
  EXPECT_EQ(split("gpt-2", "12345 abc"), (Words{"12345", " abc"}));
  // Contractions are case-sensitive in GPT-2.
  EXPECT_EQ(split("gpt-2", "I'M"), (Words{"I", "'", "M"}));
  // Non-ASCII letters, digits and whitespace follow the Unicode classes (U+3000 is whitespace).
  EXPECT_EQ(split("gpt-2", "\xD0\xBD\xD0\xB0 \xE4\xB8\xAD\xE3\x80\x80x"),
            (Words{"\xD0\xBD\xD0\xB0", " \xE4\xB8\xAD", "\xE3\x80\x80", "x"}));
  EXPECT_EQ(split("gpt-2", ""), Words{});
}

// Classes follow llama.cpp's Unicode 15.1 tables even where the system PCRE2 is older: U+31350 (CJK extension
// H) is a letter, U+11F50 (Kawi digit zero) a number.
TEST(PreTokenizerTest, RecentlyAssignedCodePointsKeepTheirClass) {
  EXPECT_EQ(split("gpt-2", "a\xF0\xB1\x8D\x90 \xF0\x91\xBD\x90"), (Words{"a\xF0\xB1\x8D\x90", " \xF0\x91\xBD\x90"}));
  EXPECT_EQ(split("default", "\xF0\x91\xAC\x80!"), (Words{"\xF0\x91\xAC\x80!"}));  // U+11B00 is punctuation
}

TEST(PreTokenizerTest, Llama3Words) {
  EXPECT_EQ(split("llama-bpe", "12345"), (Words{"123", "45"}));
  EXPECT_EQ(split("llama-bpe", "I'M ok"), (Words{"I", "'M", " ok"}));
  EXPECT_EQ(split("llama-bpe", "x\n\n  y"), (Words{"x", "\n\n", " ", " y"}));
  // The optional leading character of a word may be punctuation.
  EXPECT_EQ(split("llama-bpe", "(hi)!!\n"), (Words{"(hi", ")!!\n"}));
  EXPECT_EQ(split("llama-bpe", "\tword"), (Words{"\tword"}));
}

TEST(PreTokenizerTest, ChainedRegexesSplitWhatTheLastLeft) {
  // StarCoder: digits one by one first, then GPT-2's rules inside the rest.
  EXPECT_EQ(split("starcoder", "ab 123"), (Words{"ab", " ", "1", "2", "3"}));
  // llama.cpp's default chain: punctuation runs, GPT-2, digit runs, then three-digit groups.
  EXPECT_EQ(split("default", "x=12345"), (Words{"x", "=", "123", "45"}));
}

TEST(PreTokenizerTest, UnknownNameIsAnError) {
  auto config = pre_tokenizer_config("qwen99");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message.find("'qwen99'"), std::string::npos);
}

}  // namespace
}  // namespace pagoda
