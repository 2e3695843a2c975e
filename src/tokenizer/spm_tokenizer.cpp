#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁", SentencePiece's visible space

// A run of the text: one UTF-8 character at first, growing as merges absorb right neighbours.
struct Symbol {
  int prev;      // index of the left neighbour, -1 at the start
  int next;      // index of the right neighbour, -1 at the end
  size_t begin;  // byte offset in the escaped text
  size_t size;   // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of left + right when queued; a mismatch later means the entry is stale
};

// Highest score first; among equal scores the leftmost pair, as llama.cpp orders its queue.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

using BigramQueue = std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder>;

}  // namespace

SpmTokenizer::SpmTokenizer(const Vocab& vocab, std::optional<TokenId> unk, bool add_space_prefix)
    : vocab_(vocab), unk_(unk), add_space_prefix_(add_space_prefix) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    byte_tokens_[b] = vocab_.find(hex);
    if (!byte_tokens_[b]) byte_tokens_[b] = vocab_.find(std::string(1, static_cast<char>(b)));
  }
}

void SpmTokenizer::encode(std::string_view fragment, bool after_special, std::vector<TokenId>& out) const {
  std::string text;
  text.reserve(fragment.size() + 8);
  if (add_space_prefix_ && after_special) text += kSpaceMark;
  for (char c : fragment) {
    if (c == ' ') {
      text += kSpaceMark;
    } else {
      text.push_back(c);
    }
  }
  if (text.empty()) return;

  // Split into characters by lead byte (invalid bytes become 1-byte symbols and end up as byte tokens).
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t len = std::min(utf8_lead_length(text[offset]), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + len == text.size() ? -1 : index + 1, offset, len});
    offset += len;
  }

  BigramQueue queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].size + symbols[right].size;
    auto id = vocab_.find(std::string_view(text).substr(symbols[left].begin, size));
    if (!id) return;
    queue.push({left, right, vocab_.score(*id), size});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  // Every merged symbol is a token by construction; only single characters can be missing from the vocabulary
  // (llama.cpp's rev_merge re-segmentation therefore never applies and is not reproduced).
  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = std::string_view(text).substr(symbols[i].begin, symbols[i].size);
    if (auto id = vocab_.find(piece)) {
      out.push_back(*id);
      continue;
    }
    for (char c : piece) {
      if (auto byte_id = byte_tokens_[static_cast<uint8_t>(c)]) {
        out.push_back(*byte_id);
      } else if (unk_) {
        out.push_back(*unk_);
      }
    }
  }
}

std::string SpmTokenizer::normal_piece(std::string_view token_text) const {
  std::string out;
  out.reserve(token_text.size());
  for (size_t i = 0; i < token_text.size();) {
    if (token_text.substr(i, kSpaceMark.size()) == kSpaceMark) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(token_text[i++]);
    }
  }
  return out;
}

std::string SpmTokenizer::describe() const {
  return add_space_prefix_ ? "sentencepiece bpe, no pre-tokenizer, space prefix"
                           : "sentencepiece bpe, no pre-tokenizer, no space prefix";
}

}  // namespace pagoda
