#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

constexpr const char* kMergesKey = "tokenizer.ggml.merges";

struct BpeSymbol {
  size_t begin;  // byte offset in the encoded word
  size_t size;   // bytes; 0 once merged into its left neighbour
  int prev;
  int next;
};

struct BpeBigram {
  int left;
  int right;
  int rank;
  size_t size;  // bytes of left + right when queued; a mismatch later means the entry is stale
};

// Lowest rank first; among equal ranks the leftmost pair, as llama.cpp orders its queue.
struct BpeBigramOrder {
  bool operator()(const BpeBigram& a, const BpeBigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

BpeTokenizer::BpeTokenizer(const Vocab& vocab, PreTokenizer pre, RankMap ranks)
    : vocab_(vocab), pre_(std::move(pre)), ranks_(std::move(ranks)) {}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(const GgufFile& file, const Vocab& vocab,
                                                           const PreTokenizerConfig& pre) {
  auto merges = file.get_array(kMergesKey, GgufValueType::STRING);
  if (!merges.ok()) return merges.error();
  RankMap ranks;
  ranks.reserve((*merges)->items.size());
  for (size_t i = 0; i < (*merges)->items.size(); ++i) {
    const auto& line = std::get<std::string>((*merges)->items[i].data);
    // llama.cpp splits at the first space after the first byte; a line without one merges nothing.
    if (line.size() < 2 || line.find(' ', 1) == std::string::npos) continue;
    if (i > static_cast<size_t>(std::numeric_limits<int>::max())) break;
    ranks.emplace(line, static_cast<int>(i));  // the first occurrence of a pair keeps its rank
  }
  auto pre_tokenizer = PreTokenizer::create(pre);
  if (!pre_tokenizer.ok()) return pre_tokenizer.error();
  return std::unique_ptr<BpeTokenizer>(new BpeTokenizer(vocab, std::move(*pre_tokenizer), std::move(ranks)));
}

std::optional<int> BpeTokenizer::merge_rank(std::string_view left, std::string_view right) const {
  std::string scratch;
  return merge_rank(left, right, scratch);
}

std::optional<int> BpeTokenizer::merge_rank(std::string_view left, std::string_view right, std::string& scratch) const {
  // A merges line splits at its first space after byte 0, so a left part with a later space cannot be a merge
  // (and would make the joined key ambiguous).
  if (left.empty() || left.find(' ', 1) != std::string_view::npos) return std::nullopt;
  scratch.assign(left);
  scratch.push_back(' ');
  scratch.append(right);
  auto it = ranks_.find(std::string_view(scratch));
  if (it == ranks_.end()) return std::nullopt;
  return it->second;
}

void BpeTokenizer::encode(std::string_view fragment, bool /*after_special*/, std::vector<TokenId>& out) const {
  // llama.cpp pre-tokenizes code points, not bytes: malformed UTF-8 becomes U+FFFD before anything else.
  const std::string text = normalize_utf8_lenient(fragment);
  // PCRE2 needs valid UTF-8, but llama.cpp lets surrogates through as 3-byte sequences. The regexes see a
  // private-use stand-in of the same length and the same class (llama.cpp files both under \p{C}); the words
  // are then cut from the real text at the same offsets.
  std::string regex_text;
  for (size_t i = 0; i + 2 < text.size(); ++i) {
    if (static_cast<uint8_t>(text[i]) == 0xED && static_cast<uint8_t>(text[i + 1]) >= 0xA0) {
      if (regex_text.empty()) regex_text = text;
      regex_text.replace(i, 3, "\xEE\x80\x80");  // U+E000
      i += 2;
    }
  }
  const std::string_view split_text = regex_text.empty() ? std::string_view(text) : std::string_view(regex_text);
  for (std::string_view word : pre_.split(split_text))
    encode_word(byte_level_encode(std::string_view(text).substr(word.data() - split_text.data(), word.size())), out);
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (pre_.config().ignore_merges) {
    if (auto id = vocab_.find(word)) {
      out.push_back(*id);
      return;
    }
  }

  std::vector<BpeSymbol> symbols;
  symbols.reserve(word.size());
  for (size_t offset = 0; offset < word.size();) {
    const size_t len = std::min(utf8_lead_length(word[offset]), word.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({offset, len, index - 1, offset + len == word.size() ? -1 : index + 1});
    offset += len;
  }

  std::priority_queue<BpeBigram, std::vector<BpeBigram>, BpeBigramOrder> queue;
  std::string scratch;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const BpeSymbol& l = symbols[left];
    const BpeSymbol& r = symbols[right];
    auto rank = merge_rank(word.substr(l.begin, l.size), word.substr(r.begin, r.size), scratch);
    if (rank) queue.push({left, right, *rank, l.size + r.size});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const BpeBigram bigram = queue.top();
    queue.pop();
    BpeSymbol& left = symbols[bigram.left];
    BpeSymbol& right = symbols[bigram.right];
    // Symbols only grow to the right and keep their start, so equal sizes mean equal text: not stale.
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (const BpeSymbol& s : symbols) {
    if (s.size == 0) continue;
    const std::string_view piece = word.substr(s.begin, s.size);
    if (auto id = vocab_.find(piece)) {
      out.push_back(*id);
      continue;
    }
    // A result that is not a token (a vocabulary lacking some merge result): llama.cpp looks up each byte of
    // the encoded text on its own and drops those that are not tokens either.
    for (char c : piece)
      if (auto id = vocab_.find(std::string_view(&c, 1))) out.push_back(*id);
  }
}

std::string BpeTokenizer::normal_piece(std::string_view token_text) const { return byte_level_decode(token_text); }

std::string BpeTokenizer::describe() const {
  return "byte-level bpe, pre-tokenizer " + (pre_.config().name.empty() ? std::string("default") : pre_.config().name);
}

}  // namespace pagoda
