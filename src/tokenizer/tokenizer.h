// Tokenizer: text <-> token ids for a GGUF vocabulary (tokenizer.ggml.* metadata; vocabulary-only files work).
// Token ids match llama.cpp's llama_tokenize and pieces match its llama_token_to_piece(special = false), so
// prompts, golden outputs and KV-cache prefixes line up with llama.cpp byte for byte.
//
// Supported tokenizer.ggml.model values: "llama" (SentencePiece-style BPE, see spm_tokenizer.h) and "gpt2"
// (byte-level BPE, see bpe_tokenizer.h). All methods are const and safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf_file.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"
#include "util/result.h"

namespace pagoda {

class Tokenizer {
 public:
  // The Error names the missing or malformed key; an unsupported tokenizer.ggml.model or .pre is an Error too.
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& file);
  virtual ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special: prepend BOS / append EOS as tokenizer.ggml.add_bos_token / add_eos_token say (defaults per
  // model type as in llama.cpp). parse_special: also recognise control tokens' text (e.g. "<s>") in `text`;
  // user-defined tokens are recognised either way.
  std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special = false) const;

  // Bytes this token adds to output text: "" for control/unknown tokens, the byte of "<0x0A>"-style byte
  // tokens, "▁" -> " " for SentencePiece, GPT-2 byte alphabet -> raw bytes. May be partial UTF-8.
  // Out-of-range ids give "".
  std::string token_to_piece(TokenId id) const { return piece(id); }
  // The same without a copy, for the token path.
  const std::string& piece(TokenId id) const;
  // Concatenation of pieces (no leading-space removal or clean-up; see StreamingDetokenizer for display).
  std::string decode(std::span<const TokenId> ids) const;

  int32_t n_vocab() const { return vocab_.size(); }
  const std::string& token_text(TokenId id) const;  // raw vocabulary string; "" when out of range
  std::optional<TokenId> bos() const { return special_.bos; }
  std::optional<TokenId> eos() const { return special_.eos; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // EOS, EOT, EOM and the other tokens llama.cpp treats as end of generation (e.g. "<|im_end|>").
  bool is_end_of_generation(TokenId id) const;
  const std::string& model_type() const { return model_type_; }  // "llama" or "gpt2"
  std::string summary() const;                                   // one line for `pagoda inspect`

  const Vocab& vocab() const { return vocab_; }
  const SpecialTokens& special_tokens() const { return special_; }

 private:
  Tokenizer() = default;
  void build_pieces();

  std::string model_type_;
  Vocab vocab_;
  SpecialTokens special_;
  std::unique_ptr<TextEncoder> encoder_;  // refers to vocab_, so a Tokenizer never moves
  std::vector<std::string> pieces_;       // [n_vocab] token_to_piece, computed once at load
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool nfc_ = false;  // NFC-normalize text between special tokens first (a Hugging Face tokenizer.json asked for it)
};

}  // namespace pagoda
