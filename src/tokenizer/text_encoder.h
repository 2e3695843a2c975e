// The subword algorithm behind a Tokenizer: turns plain text (special tokens already cut out) into ids, and
// knows how its NORMAL vocabulary strings map back to bytes. One implementation per tokenizer.ggml.model.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

class TextEncoder {
 public:
  virtual ~TextEncoder() = default;

  // Appends the ids of `text`, one plain fragment of the input. `after_special` is true for the first fragment
  // and for every fragment that follows a special token (SentencePiece prefixes those with a space).
  virtual void encode(std::string_view text, bool after_special, std::vector<TokenId>& out) const = 0;

  // The bytes a NORMAL token's vocabulary string stands for ("▁the" -> " the", "Ġthe" -> " the").
  virtual std::string normal_piece(std::string_view token_text) const = 0;

  // One phrase for Tokenizer::summary(), e.g. "pre-tokenizer gpt-2".
  virtual std::string describe() const = 0;
};

}  // namespace pagoda
