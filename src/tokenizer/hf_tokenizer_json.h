// A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) presented as the GGUF tokenizer metadata that
// llama.cpp's converter would write, so that the one Tokenizer reads both formats. Supported: BPE models, either
// byte-level (GPT-2, Llama 3, Qwen2: their Split regex names the pre-tokenizer) or SentencePiece-style (a "▁"
// normalizer or Metaspace pre-tokenizer, byte fallback). SentencePiece-style merges become scores: a token's score
// is minus the rank of the first merge that forms it, so the score-driven merge order is the merge-list order
// (docs/architectures.md). Anything else (WordPiece, Unigram, an unknown pre-tokenizer or normalizer) is an Error
// that names it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf_value.h"
#include "util/result.h"

namespace pagoda {

struct HfTokenizerInput {
  const nlohmann::json* tokenizer = nullptr;         // tokenizer.json (required)
  const nlohmann::json* tokenizer_config = nullptr;  // tokenizer_config.json (may be null)
  const nlohmann::json* config = nullptr;            // config.json, for bos/eos ids it may carry (may be null)
  int64_t n_vocab = 0;                               // rows of the embedding: ids beyond the tokenizer's are padding
};

Result<std::vector<std::pair<std::string, GgufValue>>> hf_tokenizer_metadata(const HfTokenizerInput& in);

}  // namespace pagoda
