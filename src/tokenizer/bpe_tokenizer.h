// Byte-level BPE (tokenizer.ggml.model = "gpt2"), reproducing llama.cpp's llm_tokenizer_bpe: the text is cut
// into words by the pre-tokenizer, each word's bytes are mapped to GPT-2's byte alphabet, and within a word the
// adjacent pair with the lowest merge rank (its line in tokenizer.ggml.merges) is merged until none is left.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "io/gguf_file.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/text_encoder.h"
#include "tokenizer/vocab.h"
#include "util/result.h"

namespace pagoda {

class BpeTokenizer final : public TextEncoder {
 public:
  // Reads tokenizer.ggml.merges. `vocab` must outlive the tokenizer.
  static Result<std::unique_ptr<BpeTokenizer>> create(const GgufFile& file, const Vocab& vocab,
                                                      const PreTokenizerConfig& pre);

  void encode(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;
  std::string normal_piece(std::string_view token_text) const override;
  std::string describe() const override;

  // Rank of merging `left` and `right` (lower merges first), if the pair is a merge.
  std::optional<int> merge_rank(std::string_view left, std::string_view right) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using RankMap = std::unordered_map<std::string, int, Hash, std::equal_to<>>;

  BpeTokenizer(const Vocab& vocab, PreTokenizer pre, RankMap ranks);
  std::optional<int> merge_rank(std::string_view left, std::string_view right, std::string& scratch) const;
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  const Vocab& vocab_;
  PreTokenizer pre_;
  RankMap ranks_;  // "left right" (the merges line) -> rank
};

}  // namespace pagoda
