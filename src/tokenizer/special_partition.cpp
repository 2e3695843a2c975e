#include "tokenizer/special_partition.h"

namespace pagoda {
namespace {

// C isspace in the "C" locale, which is what llama.cpp's strip rules see.
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Splits one plain fragment on every occurrence of `token`, appending the pieces to `out`.
void split_fragment(std::string_view text, const TextFragment& frag, TokenId id, std::string_view token, uint32_t attr,
                    std::vector<TextFragment>& out) {
  size_t begin = frag.offset;
  const size_t end = frag.offset + frag.length;
  while (begin < end) {
    const size_t match = text.substr(0, end).find(token, begin);
    if (match == std::string_view::npos) break;
    size_t left_end = match;
    if (attr & TokenAttr::kLstrip)
      while (left_end > begin && is_ascii_space(text[left_end - 1])) --left_end;
    if (left_end > begin) out.push_back({std::nullopt, begin, left_end - begin});
    out.push_back({id, match, token.size()});
    begin = match + token.size();
    if (attr & TokenAttr::kRstrip)
      while (begin < end && is_ascii_space(text[begin])) ++begin;
  }
  if (begin < end) out.push_back({std::nullopt, begin, end - begin});
}

}  // namespace

std::vector<TextFragment> partition_special_tokens(std::string_view text, std::span<const TokenId> order,
                                                   const Vocab& vocab, bool parse_special) {
  std::vector<TextFragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({std::nullopt, 0, text.size()});
  std::vector<TextFragment> next;
  for (TokenId id : order) {
    const uint32_t attr = vocab.attr(id);
    if (!parse_special && (attr & (TokenAttr::kControl | TokenAttr::kUnknown))) continue;
    const std::string& token = vocab.text(id);
    // Cheap reject: most special tokens do not occur in most inputs.
    if (text.find(token) == std::string_view::npos) continue;
    next.clear();
    for (const TextFragment& frag : fragments) {
      if (frag.token) {
        next.push_back(frag);
      } else {
        split_fragment(text, frag, id, token, attr, next);
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace pagoda
