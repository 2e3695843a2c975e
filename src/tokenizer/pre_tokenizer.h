// Pre-tokenizer of byte-level BPE vocabularies: cuts text into words with the regular expressions named by
// tokenizer.ggml.pre, so that merges never cross a word boundary. Regexes are PCRE2 (UTF + UCP mode) and are
// applied in sequence, each one splitting the pieces the previous one left (llama.cpp's unicode_regex_split):
// a match becomes a word and so does any unmatched gap between matches.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pagoda {

struct PreTokenizerConfig {
  std::string name;                  // the tokenizer.ggml.pre value this came from ("" when absent)
  std::vector<std::string> regexes;  // PCRE2 syntax, applied in order
  bool ignore_merges = false;        // a word that is itself a token is emitted whole (llama-3 style)
  bool add_bos = false;              // llama.cpp's add_bos default for this pre-tokenizer
};

// Looks up a tokenizer.ggml.pre value. Supported: the GPT-2 family ("gpt-2", "phi-2", "mpt", "olmo", ...),
// the llama-3 family ("llama-bpe", "llama3", "llama-v3", ..., "dbrx", "smaug-bpe"), the Qwen2 family ("qwen2",
// "deepseek-r1-qwen", "megrez", ...), the StarCoder family
// ("starcoder", "refact", "command-r", "smollm", ...) and "default" / absent (llama.cpp's fallback chain).
// Any other name is an error, as it is in llama.cpp: guessing a pre-tokenizer silently changes token ids.
Result<PreTokenizerConfig> pre_tokenizer_config(const std::string& pre);

class PreTokenizer {
 public:
  static Result<PreTokenizer> create(const PreTokenizerConfig& config);
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Splits valid UTF-8 text (see normalize_utf8_lenient) into words; the views point into `text`.
  // Thread-safe: the compiled patterns are shared read-only, match state is per call.
  std::vector<std::string_view> split(std::string_view text) const;

  const PreTokenizerConfig& config() const { return config_; }

 private:
  struct Compiled;
  PreTokenizer(PreTokenizerConfig config, std::unique_ptr<Compiled> compiled);

  PreTokenizerConfig config_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace pagoda
