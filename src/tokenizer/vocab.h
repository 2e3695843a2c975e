// The token table of a tokenizer: for every id its text, its score (SentencePiece merge priority) and its
// attributes, plus the reverse text -> id index. Loaded from the GGUF keys tokenizer.ggml.tokens / scores /
// token_type and validated: the arrays agree in length, no two tokens share a text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/gguf_file.h"
#include "util/result.h"

namespace pagoda {

using TokenId = int32_t;

// Token attribute bits, the same values as llama.cpp's llama_token_attr, so behaviour can be compared rule by rule.
struct TokenAttr {
  static constexpr uint32_t kUndefined = 0;
  static constexpr uint32_t kUnknown = 1u << 0;
  static constexpr uint32_t kUnused = 1u << 1;
  static constexpr uint32_t kNormal = 1u << 2;
  static constexpr uint32_t kControl = 1u << 3;
  static constexpr uint32_t kUserDefined = 1u << 4;
  static constexpr uint32_t kByte = 1u << 5;
  static constexpr uint32_t kNormalized = 1u << 6;
  static constexpr uint32_t kLstrip = 1u << 7;  // a match swallows whitespace to its left
  static constexpr uint32_t kRstrip = 1u << 8;  // a match swallows whitespace to its right
};

class Vocab {
 public:
  static Result<Vocab> from_gguf(const GgufFile& file);
  // For tests and tools: texts with optional scores/attrs (empty = 0 / kNormal). Same validation as from_gguf.
  static Result<Vocab> from_tokens(std::vector<std::string> texts, std::vector<float> scores = {},
                                   std::vector<uint32_t> attrs = {});

  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  bool contains(TokenId id) const { return id >= 0 && id < size(); }

  // Preconditions for the accessors below: contains(id).
  const std::string& text(TokenId id) const { return texts_[static_cast<size_t>(id)]; }
  float score(TokenId id) const { return scores_[static_cast<size_t>(id)]; }
  uint32_t attr(TokenId id) const { return attrs_[static_cast<size_t>(id)]; }
  bool has_attr(TokenId id, uint32_t mask) const { return (attr(id) & mask) != 0; }
  void set_attr(TokenId id, uint32_t attr) { attrs_[static_cast<size_t>(id)] = attr; }
  void add_attr(TokenId id, uint32_t bits) { attrs_[static_cast<size_t>(id)] |= bits; }

  std::optional<TokenId> find(std::string_view text) const {
    auto it = index_.find(text);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }

 private:
  // Heterogeneous lookup: the tokenizers probe with string_views into the input, without allocating.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<std::string> texts_;  // [n_vocab]
  std::vector<float> scores_;       // [n_vocab]
  std::vector<uint32_t> attrs_;     // [n_vocab] TokenAttr bits
  std::unordered_map<std::string, TokenId, Hash, std::equal_to<>> index_;
};

// Reads an array of integers of any integer element kind (GGUF writers differ: int32 is usual for token types).
Result<std::vector<int64_t>> read_int_array(const GgufFile& file, const std::string& key);

}  // namespace pagoda
