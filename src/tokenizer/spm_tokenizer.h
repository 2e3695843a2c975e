// SentencePiece-style BPE (tokenizer.ggml.model = "llama"), reproducing llama.cpp's llm_tokenizer_spm:
// spaces become "▁" (U+2581), a fragment that starts the input or follows a special token gets a leading space
// (add_space_prefix), then adjacent pieces are merged greedily, highest vocabulary score first, as long as the
// merged string is a token. Characters left without a token fall back to byte tokens "<0xXX>".
#pragma once

#include <array>
#include <optional>

#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"

namespace pagoda {

class SpmTokenizer final : public TextEncoder {
 public:
  // `vocab` must outlive this object. `unk` stands in for a byte that has no byte token (llama.cpp aborts).
  SpmTokenizer(const Vocab& vocab, std::optional<TokenId> unk, bool add_space_prefix);

  void encode(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;
  std::string normal_piece(std::string_view token_text) const override;
  std::string describe() const override;

 private:
  const Vocab& vocab_;
  std::optional<TokenId> unk_;
  bool add_space_prefix_;
  std::array<std::optional<TokenId>, 256> byte_tokens_;  // byte -> "<0xXX>" token, else the 1-byte token
};

}  // namespace pagoda
