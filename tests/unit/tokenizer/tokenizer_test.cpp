#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "toy_vocabs.h"

namespace pagoda {
namespace {

using test_util::GgufTestBytes;
using test_util::must_load;
using test_util::tokenizer_from_bytes;
using test_util::ToyBpe;
using test_util::ToySpm;
using Ids = std::vector<TokenId>;

// ---- loading and validation -------------------------------------------------------------------------------

std::string load_error(const GgufTestBytes& b) {
  auto tok = tokenizer_from_bytes(b.bytes());
  EXPECT_FALSE(tok.ok());
  return tok.ok() ? std::string() : tok.error().message;
}

TEST(TokenizerLoadTest, MissingTokensKeyIsNamed) {
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "llama").add_f32s("tokenizer.ggml.scores", {0, 0});
  EXPECT_NE(load_error(b).find("tokenizer.ggml.tokens"), std::string::npos);
}

TEST(TokenizerLoadTest, MissingModelKeyIsNamed) {
  GgufTestBytes b;
  b.add_strings("tokenizer.ggml.tokens", {"a", "b"});
  EXPECT_NE(load_error(b).find("tokenizer.ggml.model"), std::string::npos);
}

TEST(TokenizerLoadTest, ScoresOfWrongLengthAreRejected) {
  ToySpm spm;
  spm.scores.pop_back();
  const std::string err = load_error(spm.gguf());
  EXPECT_NE(err.find("tokenizer.ggml.scores"), std::string::npos) << err;
  EXPECT_NE(err.find(std::to_string(spm.tokens.size())), std::string::npos) << err;
}

TEST(TokenizerLoadTest, LongerScoresAreRejectedToo) {
  ToySpm spm;
  spm.scores.push_back(0);
  EXPECT_NE(load_error(spm.gguf()).find("tokenizer.ggml.scores"), std::string::npos);
}

TEST(TokenizerLoadTest, TokenTypesOfWrongLengthAreRejected) {
  ToySpm spm;
  spm.types.pop_back();
  EXPECT_NE(load_error(spm.gguf()).find("tokenizer.ggml.token_type"), std::string::npos);
}

TEST(TokenizerLoadTest, ScoresOfWrongKindAreRejected) {
  ToySpm spm;
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "llama")
      .add_strings("tokenizer.ggml.tokens", spm.tokens)
      .add_strings("tokenizer.ggml.scores", spm.tokens);
  EXPECT_NE(load_error(b).find("tokenizer.ggml.scores"), std::string::npos);
}

TEST(TokenizerLoadTest, DuplicateTokenTextsAreRejected) {
  ToySpm spm;
  spm.add("He", 0);
  EXPECT_NE(load_error(spm.gguf()).find("same text 'He'"), std::string::npos);
}

TEST(TokenizerLoadTest, UnsupportedModelIsNamed) {
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "bert").add_strings("tokenizer.ggml.tokens", {"a"});
  const std::string err = load_error(b);
  EXPECT_NE(err.find("'bert'"), std::string::npos) << err;
  EXPECT_NE(err.find("tokenizer.ggml.model"), std::string::npos) << err;
}

TEST(TokenizerLoadTest, Gpt2WithoutMergesIsRejected) {
  ToyBpe bpe;
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "gpt2")
      .add_string("tokenizer.ggml.pre", "gpt-2")
      .add_strings("tokenizer.ggml.tokens", bpe.tokens);
  EXPECT_NE(load_error(b).find("tokenizer.ggml.merges"), std::string::npos);
}

TEST(TokenizerLoadTest, UnknownPreTokenizerIsRejected) {
  const std::string err = load_error(ToyBpe().gguf("my-own-pre"));
  EXPECT_NE(err.find("'my-own-pre'"), std::string::npos) << err;
  EXPECT_NE(err.find("tokenizer.ggml.pre"), std::string::npos) << err;
}

TEST(TokenizerLoadTest, FlagOfWrongKindIsNamed) {
  auto b = ToySpm().gguf();
  b.add_string("tokenizer.ggml.add_bos_token", "yes");
  EXPECT_NE(load_error(b).find("tokenizer.ggml.add_bos_token"), std::string::npos);
}

TEST(TokenizerLoadTest, SpecialIdOfWrongKindIsNamed) {
  ToySpm spm;
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "llama")
      .add_strings("tokenizer.ggml.tokens", spm.tokens)
      .add_string("tokenizer.ggml.eos_token_id", "2");
  EXPECT_NE(load_error(b).find("tokenizer.ggml.eos_token_id"), std::string::npos);
}

// Real files carry 0xFFFFFFFF for "none" (stories260K's padding id); llama.cpp keeps the default instead.
TEST(TokenizerLoadTest, OutOfRangeSpecialIdKeepsTheDefault) {
  ToySpm spm;
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "llama")
      .add_strings("tokenizer.ggml.tokens", spm.tokens)
      .add_u32("tokenizer.ggml.bos_token_id", 0xFFFFFFFFu)
      .add_u32("tokenizer.ggml.eos_token_id", 100000);
  auto tok = must_load(b);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos(), ToySpm::kBos);
  EXPECT_EQ(tok->eos(), ToySpm::kEos);
}

TEST(TokenizerLoadTest, AddEosWithoutAnEosTokenIsRejected) {
  // Two tokens: the SentencePiece default BOS id 1 exists but EOS id 2 does not.
  GgufTestBytes b;
  b.add_string("tokenizer.ggml.model", "llama")
      .add_strings("tokenizer.ggml.tokens", {"<unk>", "<s>"})
      .add_bool("tokenizer.ggml.add_eos_token", true);
  EXPECT_NE(load_error(b).find("add_eos_token"), std::string::npos);
}

// ---- SentencePiece ----------------------------------------------------------------------------------------

TEST(SpmTokenizerTest, BosFollowsAddSpecialAndMetadata) {
  ToySpm spm;
  const TokenId hello = spm.id("\xE2\x96\x81Hello");
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->add_bos());  // SentencePiece default
  EXPECT_FALSE(tok->add_eos());
  EXPECT_EQ(tok->encode("Hello", /*add_special=*/true), (Ids{ToySpm::kBos, hello}));
  EXPECT_EQ(tok->encode("Hello", /*add_special=*/false), (Ids{hello}));
  EXPECT_EQ(tok->encode("", /*add_special=*/true), (Ids{ToySpm::kBos}));
  EXPECT_EQ(tok->encode("", /*add_special=*/false), (Ids{}));

  auto no_bos = must_load(
      spm.gguf().add_bool("tokenizer.ggml.add_bos_token", false).add_bool("tokenizer.ggml.add_eos_token", true));
  ASSERT_NE(no_bos, nullptr);
  EXPECT_EQ(no_bos->encode("Hello", true), (Ids{hello, ToySpm::kEos}));
  EXPECT_EQ(no_bos->encode("Hello", false), (Ids{hello}));
}

TEST(SpmTokenizerTest, MergesByScoreWithLeadingSpace) {
  ToySpm spm;
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("Hello world", false), (Ids{spm.id("\xE2\x96\x81Hello"), spm.id("\xE2\x96\x81world")}));
  // Without the space prefix "Hello" cannot use "▁Hello".
  auto no_prefix = must_load(spm.gguf().add_bool("tokenizer.ggml.add_space_prefix", false));
  ASSERT_NE(no_prefix, nullptr);
  EXPECT_EQ(no_prefix->encode("Hello", false), (Ids{spm.id("Hello")}));
  // Merge order: "llo" (-3) is only reachable after "ll" (-1); "Hell" is not a token.
  EXPECT_EQ(no_prefix->encode("Hell", false), (Ids{spm.id("He"), spm.id("ll")}));
}

TEST(SpmTokenizerTest, UnknownCharactersFallBackToBytes) {
  ToySpm spm;
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  // "é" = C3 A9 is not a piece: "▁" then its two byte tokens.
  EXPECT_EQ(tok->encode("\xC3\xA9", false),
            (Ids{spm.id("\xE2\x96\x81"), ToySpm::byte_token(0xC3), ToySpm::byte_token(0xA9)}));
  EXPECT_EQ(tok->decode(tok->encode("\xC3\xA9 x\n", false)), " \xC3\xA9 x\n");
}

TEST(SpmTokenizerTest, SpecialTokensInText) {
  ToySpm spm;
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  const TokenId hello = spm.id("\xE2\x96\x81Hello");
  // Control token text is recognised only with parse_special; the fragment after it gets the space prefix.
  EXPECT_EQ(tok->encode("</s>Hello", false, /*parse_special=*/true), (Ids{ToySpm::kEos, hello}));
  const Ids literal = tok->encode("</s>Hello", false, /*parse_special=*/false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), ToySpm::kEos), 0);
  EXPECT_EQ(tok->decode(literal), " </s>Hello");
  // User-defined tokens are matched either way.
  const TokenId tool = spm.id("<tool>");
  EXPECT_EQ(tok->encode("<tool>Hello", false, false), (Ids{tool, hello}));
  EXPECT_EQ(tok->encode("Hello<tool>", false, false), (Ids{hello, tool}));
}

TEST(SpmTokenizerTest, PiecesFollowTokenKinds) {
  ToySpm spm;
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->token_to_piece(ToySpm::kBos), "");  // control
  EXPECT_EQ(tok->token_to_piece(ToySpm::kUnk), "");  // unknown
  EXPECT_EQ(tok->token_to_piece(ToySpm::byte_token('\n')), "\n");
  EXPECT_EQ(tok->token_to_piece(spm.id("\xE2\x96\x81Hello")), " Hello");
  EXPECT_EQ(tok->token_to_piece(spm.id("<tool>")), "<tool>");  // user-defined renders verbatim
  EXPECT_EQ(tok->token_to_piece(-1), "");
  EXPECT_EQ(tok->token_to_piece(tok->n_vocab()), "");
  EXPECT_EQ(tok->token_text(spm.id("\xE2\x96\x81Hello")), "\xE2\x96\x81Hello");
  EXPECT_EQ(tok->token_text(tok->n_vocab()), "");
}

TEST(SpmTokenizerTest, EndOfGenerationIncludesTokensFoundByText) {
  ToySpm spm;
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  const TokenId im_end = spm.id("<|im_end|>");
  EXPECT_TRUE(tok->is_end_of_generation(ToySpm::kEos));
  EXPECT_TRUE(tok->is_end_of_generation(im_end));
  EXPECT_FALSE(tok->is_end_of_generation(ToySpm::kBos));
  EXPECT_FALSE(tok->is_end_of_generation(spm.id("He")));
  // Recognised as end-of-turn, it became a control token: hidden in output, parsed only on request.
  EXPECT_EQ(tok->token_to_piece(im_end), "");
  EXPECT_EQ(tok->encode("<|im_end|>", false, true), (Ids{im_end}));
  EXPECT_NE(tok->encode("<|im_end|>", false, false), (Ids{im_end}));
}

TEST(SpmTokenizerTest, SummaryNamesTypeSizeAndIds) {
  ToySpm spm;
  auto tok = must_load(spm.gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->model_type(), "llama");
  const std::string s = tok->summary();
  EXPECT_NE(s.find("llama"), std::string::npos) << s;
  EXPECT_NE(s.find(std::to_string(spm.tokens.size()) + " tokens"), std::string::npos) << s;
  EXPECT_NE(s.find("bos 1"), std::string::npos) << s;
  EXPECT_NE(s.find("eos 2"), std::string::npos) << s;
}

// ---- byte-level BPE ----------------------------------------------------------------------------------------

TEST(BpeTokenizerTest, MergesByRankWithinWords) {
  auto tok = must_load(ToyBpe().gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->model_type(), "gpt2");
  EXPECT_EQ(tok->encode(" the", false), (Ids{ToyBpe::kGthe}));
  EXPECT_EQ(tok->encode("the", false), (Ids{'t', ToyBpe::kHe}));
  EXPECT_EQ(tok->encode("hello", false), (Ids{ToyBpe::kHe, ToyBpe::kLl, 'o'}));
  // The pre-tokenizer keeps merges inside words: "e" + " t" never merges across the boundary.
  EXPECT_EQ(tok->encode("he the", false), (Ids{ToyBpe::kHe, ToyBpe::kGthe}));
  // Raw bytes map through the byte alphabet: "\n" is its own token, "é" two.
  EXPECT_EQ(tok->encode("\n\xC3\xA9", false), (Ids{'\n', 0xC3, 0xA9}));
}

TEST(BpeTokenizerTest, BosOnlyWhenMetadataAsks) {
  auto tok = must_load(ToyBpe().gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_FALSE(tok->add_bos());  // GPT-2 default
  EXPECT_EQ(tok->encode(" the", true), (Ids{ToyBpe::kGthe}));
  auto with_bos = must_load(ToyBpe().gguf().add_bool("tokenizer.ggml.add_bos_token", true));
  ASSERT_NE(with_bos, nullptr);
  EXPECT_EQ(with_bos->encode(" the", true), (Ids{ToyBpe::kEndOfText, ToyBpe::kGthe}));
  EXPECT_EQ(with_bos->encode(" the", false), (Ids{ToyBpe::kGthe}));
  // llama-3's pre-tokenizer defaults add_bos to true.
  auto llama3 = must_load(ToyBpe().gguf("llama-bpe"));
  ASSERT_NE(llama3, nullptr);
  EXPECT_TRUE(llama3->add_bos());
}

TEST(BpeTokenizerTest, PiecesAreRawBytes) {
  auto tok = must_load(ToyBpe().gguf());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->token_to_piece(ToyBpe::kGthe), " the");
  EXPECT_EQ(tok->token_to_piece(0xC3), "\xC3");
  EXPECT_EQ(tok->token_to_piece(ToyBpe::kEndOfText), "");
  EXPECT_TRUE(tok->is_end_of_generation(ToyBpe::kEndOfText));
  const std::string text = "a\tb \xF0\x9F\xA6\x99 the\r\n";
  EXPECT_EQ(tok->decode(tok->encode(text, false)), text);
}

TEST(BpeTokenizerTest, MalformedUtf8BecomesReplacementCharacter) {
  auto tok = must_load(ToyBpe().gguf());
  ASSERT_NE(tok, nullptr);
  // As in llama.cpp: the pre-tokenizer reads code points, so a stray byte turns into U+FFFD (EF BF BD).
  EXPECT_EQ(tok->encode("\xFF", false), (Ids{0xEF, 0xBF, 0xBD}));
}

}  // namespace
}  // namespace pagoda
