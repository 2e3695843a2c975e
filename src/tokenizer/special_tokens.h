// Special tokens: the ids named in GGUF metadata (tokenizer.ggml.bos_token_id, ...), the set of tokens that end
// generation, and the tokens that are cut out of input text before subword encoding.
//
// GGUF files often omit ids and mark tokens inconsistently, so llama.cpp recognises many special tokens by
// their text ("<|eot_id|>", "<|im_end|>", "</s>", ...) and adjusts their attributes (e.g. marks them CONTROL,
// which changes both how input text is split and how the token renders). We apply the same rules so that ids
// and pieces agree with llama.cpp; the rules live here, in one place, instead of spreading into the encoders.
#pragma once

#include <optional>
#include <vector>

#include "io/gguf_file.h"
#include "tokenizer/vocab.h"
#include "util/result.h"

namespace pagoda {

enum class VocabKind {
  kSpm,  // tokenizer.ggml.model = "llama"
  kBpe,  // tokenizer.ggml.model = "gpt2"
};

struct SpecialTokens {
  std::optional<TokenId> bos, eos, eot, eom, unk, sep, pad, mask;
  std::optional<TokenId> fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  std::vector<TokenId> end_of_generation;  // sorted ascending
  // Tokens matched verbatim in input text (CONTROL, USER_DEFINED or UNKNOWN), longest text first so that a
  // long token wins over a shorter one it contains.
  std::vector<TokenId> partition_order;
};

// Reads the ids (out-of-range ids fall back to the model type's default, as in llama.cpp, because real files
// carry sentinels such as 0xFFFFFFFF) and applies llama.cpp's text-based rules, updating `vocab`'s attributes.
Result<SpecialTokens> load_special_tokens(const GgufFile& file, VocabKind kind, Vocab& vocab);

}  // namespace pagoda
