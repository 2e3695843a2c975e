// Test helper: small hand-made vocabularies whose tokenizations can be worked out on paper.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf_test_bytes.h"
#include "io/gguf_file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::test_util {

// SentencePiece-style: 0 <unk>, 1 <s>, 2 </s>, 3..258 byte tokens <0x00>..<0xFF>, then normal pieces.
struct ToySpm {
  static constexpr TokenId kUnk = 0, kBos = 1, kEos = 2;
  static TokenId byte_token(uint8_t b) { return 3 + b; }

  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};

  ToySpm() {
    for (int b = 0; b < 256; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      add(hex, 0, 6);
    }
    // Merges happen highest score first: ll, He, llo, Hello, then ▁Hello.
    for (const char* c : {"\xE2\x96\x81", "H", "e", "l", "o", "w", "r", "d"}) add(c, -10);
    add("ll", -1);
    add("He", -2);
    add("llo", -3);
    add("Hello", -4);
    add("\xE2\x96\x81Hello", -5);
    add("\xE2\x96\x81w", -6);
    add("or", -6);
    add("ld", -6);
    add("\xE2\x96\x81wor", -7);
    add("\xE2\x96\x81world", -8);
    add("<|im_end|>", 0, 1);  // typed NORMAL by a careless converter; llama.cpp still treats it as EOT
    add("<tool>", 0, 4);      // USER_DEFINED: always matched in input text
  }
  TokenId add(const std::string& text, float score, int32_t type = 1) {
    tokens.push_back(text);
    scores.push_back(score);
    types.push_back(type);
    return static_cast<TokenId>(tokens.size() - 1);
  }
  TokenId id(const std::string& text) const {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == text) return static_cast<TokenId>(i);
    ADD_FAILURE() << "no token " << text;
    return -1;
  }
  // The standard keys; callers add or override more before bytes().
  GgufTestBytes gguf() const {
    GgufTestBytes b;
    b.add_string("tokenizer.ggml.model", "llama")
        .add_strings("tokenizer.ggml.tokens", tokens)
        .add_f32s("tokenizer.ggml.scores", scores)
        .add_i32s("tokenizer.ggml.token_type", types)
        .add_u32("tokenizer.ggml.bos_token_id", kBos)
        .add_u32("tokenizer.ggml.eos_token_id", kEos)
        .add_u32("tokenizer.ggml.unknown_token_id", kUnk);
    return b;
  }
};

// Byte-level BPE: ids 0..255 are the byte alphabet (id = byte value), then merge results and <|endoftext|>.
struct ToyBpe {
  static constexpr TokenId kGt = 256, kHe = 257, kGthe = 258, kLl = 259, kEndOfText = 260;

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "l l"};  // "Ġ t", "h e", "Ġt he", "l l"

  ToyBpe() {
    for (int b = 0; b < 256; ++b) {
      tokens.push_back(byte_level_char(static_cast<uint8_t>(b)));
      types.push_back(1);
    }
    for (const char* t : {"\xC4\xA0t", "he", "\xC4\xA0the", "ll"}) {
      tokens.push_back(t);
      types.push_back(1);
    }
    tokens.push_back("<|endoftext|>");
    types.push_back(3);
  }
  GgufTestBytes gguf(const std::string& pre = "gpt-2") const {
    GgufTestBytes b;
    b.add_string("tokenizer.ggml.model", "gpt2")
        .add_string("tokenizer.ggml.pre", pre)
        .add_strings("tokenizer.ggml.tokens", tokens)
        .add_i32s("tokenizer.ggml.token_type", types)
        .add_strings("tokenizer.ggml.merges", merges)
        .add_u32("tokenizer.ggml.bos_token_id", kEndOfText)
        .add_u32("tokenizer.ggml.eos_token_id", kEndOfText);
    return b;
  }
};

// Parses `bytes` (kept alive by the caller only for the call: the Tokenizer copies what it needs).
inline Result<std::unique_ptr<Tokenizer>> tokenizer_from_bytes(const std::vector<uint8_t>& bytes) {
  auto file = GgufFile::parse(bytes.data(), bytes.size(), "<test>");
  if (!file.ok()) return file.error();
  return Tokenizer::from_gguf(*file);
}

inline std::unique_ptr<Tokenizer> must_load(const GgufTestBytes& b) {
  auto tok = tokenizer_from_bytes(b.bytes());
  EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().message);
  return tok.ok() ? std::move(*tok) : nullptr;
}

}  // namespace pagoda::test_util
