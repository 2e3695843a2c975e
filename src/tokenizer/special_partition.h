// Cuts special tokens out of input text before subword encoding, as llama.cpp's tokenizer_st_partition does:
// user-defined tokens are always recognised (Hugging Face "added tokens"); control and unknown tokens only
// when the caller asks to parse special text (otherwise "<s>" typed by a user stays three characters).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

struct TextFragment {
  std::optional<TokenId> token;  // set: a special token; unset: plain text [offset, offset + length)
  size_t offset = 0;
  size_t length = 0;
};

// `order`: the candidate tokens, longest first (SpecialTokens::partition_order). Earlier tokens claim text
// first, everywhere in the input, before later ones are searched for in what is left. Tokens with the
// LSTRIP/RSTRIP attribute swallow the ASCII whitespace next to them. No plain fragment is empty.
std::vector<TextFragment> partition_special_tokens(std::string_view text, std::span<const TokenId> order,
                                                   const Vocab& vocab, bool parse_special);

}  // namespace pagoda
