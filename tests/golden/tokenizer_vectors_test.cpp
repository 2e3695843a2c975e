// llama.cpp's tokenizer test vectors (shared/vocab/ggml-vocab-*.gguf.inp/.out): every text must encode to
// exactly the recorded ids. The files are read the way llama.cpp's tests/test-tokenizer-0.cpp reads them:
// texts are separated by "\n__ggml_vocab_test__\n" (so a text keeps its inner newlines and the file's final
// separator ends the last text), expected ids are one line per text, and the ids are produced with
// add_special = false, parse_special = false.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf_file.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "vocab_vectors.h"

#ifndef PAGODA_SHARED_DIR
#define PAGODA_SHARED_DIR "../shared"
#endif

namespace pagoda {
namespace {

std::string shared_path(const std::string& rel) { return std::string(PAGODA_SHARED_DIR) + "/" + rel; }

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  auto file = GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error().message);
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().message);
  if (!tok.ok()) return nullptr;
  return std::move(*tok);
}

std::string ids_string(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

struct VocabParam {
  const char* name;
  const char* model_type;
  size_t expected_cases;
};

void PrintTo(const VocabParam& p, std::ostream* os) { *os << p.name; }

class TokenizerVectorsTest : public ::testing::TestWithParam<VocabParam> {};

TEST_P(TokenizerVectorsTest, EveryCaseMatchesLlamaCpp) {
  const std::string path = shared_path(std::string("vocab/ggml-vocab-") + GetParam().name + ".gguf");
  auto tok = load_tokenizer(path);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->model_type(), GetParam().model_type);
  const auto cases = read_vectors(path);
  ASSERT_EQ(cases.size(), GetParam().expected_cases) << "could not read " << path << ".inp/.out";

  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto ids = tok->encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids_string(ids), ids_string(c.ids)) << "case " << i << ": '" << c.text << "'";
    if (ids == c.ids) ++passed;
  }
  std::cout << "[ vectors  ] " << GetParam().name << ": " << passed << "/" << cases.size() << " cases match\n";
  EXPECT_EQ(passed, cases.size());
}

// llama.cpp's test only prints the detokenized text; we assert it. Every vocabulary here has byte fallback (or
// is byte-level), so decoding is lossless; SentencePiece adds the one leading space of add_space_prefix.
TEST_P(TokenizerVectorsTest, DecodeRoundTrips) {
  const std::string path = shared_path(std::string("vocab/ggml-vocab-") + GetParam().name + ".gguf");
  auto tok = load_tokenizer(path);
  ASSERT_NE(tok, nullptr);
  const auto cases = read_vectors(path);
  ASSERT_FALSE(cases.empty());
  const bool spm = tok->model_type() == "llama";
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const std::string expected = spm && !c.text.empty() ? " " + c.text : c.text;
    EXPECT_EQ(tok->decode(c.ids), expected) << "case " << i;
    // Streaming gives the same text when the input is valid UTF-8.
    StreamingDetokenizer stream(*tok);
    std::string streamed;
    for (TokenId id : c.ids) streamed += stream.push(id);
    streamed += stream.flush();
    EXPECT_EQ(streamed, expected) << "case " << i;
  }
}

// llama.cpp's test tokenizes from every hardware thread at once; a Tokenizer is shared the same way by the
// server, so encoding must not depend on hidden mutable state.
TEST_P(TokenizerVectorsTest, EncodesConcurrently) {
  const std::string path = shared_path(std::string("vocab/ggml-vocab-") + GetParam().name + ".gguf");
  auto tok = load_tokenizer(path);
  ASSERT_NE(tok, nullptr);
  const auto cases = read_vectors(path);
  ASSERT_FALSE(cases.empty());
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (const auto& c : cases)
          if (tok->encode(c.text, false, false) != c.ids) ++mismatches[t];
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, TokenizerVectorsTest,
                         ::testing::Values(VocabParam{"llama-spm", "llama", 46}, VocabParam{"phi-3", "llama", 46},
                                           VocabParam{"gpt-2", "gpt2", 46}, VocabParam{"llama-bpe", "gpt2", 46},
                                           VocabParam{"qwen2", "gpt2", 46}),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// Special-token handling, expected ids from llama.cpp's llama-tokenize (--no-bos, with and without
// --no-parse-special). Phi-3's chat tokens swallow whitespace to their right (RSTRIP, keyed on the model name),
// and its "</s>" is USER_DEFINED in the file but becomes CONTROL as an end-of-generation token.
TEST(TokenizerGoldenTest, SpecialTokensMatchLlamaCpp) {
  struct Case {
    const char* vocab;
    std::string text;
    bool parse_special;
    std::vector<TokenId> ids;
  };
  const std::vector<Case> cases = {
      {"phi-3", "<|user|>  hi</s> there", true, {32010, 7251, 2, 727}},
      {"phi-3", "<|user|>  hi</s> there", false, {529, 29989, 1792, 29989, 29958, 29871, 7251, 829, 29879, 29958, 727}},
      {"phi-3", "<|assistant|>\nOk<|end|>", true, {32001, 3674, 32007}},
      {"gpt-2", "<|endoftext|>Hello world", true, {50256, 15496, 995}},
      {"gpt-2", "<|endoftext|>Hello world", false, {27, 91, 437, 1659, 5239, 91, 29, 15496, 995}},
      {"llama-spm", "<s>Hello</s> <unk>x", true, {1, 15043, 2, 259, 0, 921}},
      {"llama-spm",
       "<s>Hello</s> <unk>x",
       false,
       {529, 29879, 29958, 10994, 829, 29879, 29958, 529, 2960, 29958, 29916}},
  };
  for (const auto& c : cases) {
    auto tok = load_tokenizer(shared_path(std::string("vocab/ggml-vocab-") + c.vocab + ".gguf"));
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(ids_string(tok->encode(c.text, false, c.parse_special)), ids_string(c.ids))
        << c.vocab << " '" << c.text << "' parse_special=" << c.parse_special;
  }
}

// The prompts of llama.cpp's greedy run on stories260K, recorded with BOS (llama_tokenize, add_special = true).
TEST(TokenizerGoldenTest, Stories260kPromptsMatchLlamaCpp) {
  auto tok = load_tokenizer(shared_path("models/stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  std::ifstream in(shared_path("golden/stories260K-greedy.jsonl"));
  ASSERT_TRUE(in.good());
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const auto expected = j.at("prompt_ids").get<std::vector<TokenId>>();
    const std::string prompt = j.at("prompt").get<std::string>();
    EXPECT_EQ(ids_string(tok->encode(prompt, /*add_special=*/true)), ids_string(expected)) << prompt;
    ++n;
  }
  EXPECT_EQ(n, 12u);
}

}  // namespace
}  // namespace pagoda
