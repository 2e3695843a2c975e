// The texts of the anchor benchmark, all generated deterministically from a seed: anchors of an exact token length,
// the 1,000 snippets of the rag mode's store, and the stable facts with their probes (functional metrics).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::anchorbench {

// One sentence of story facts ("Lily has a dog named Max. Max is brown."), varied by `index`.
std::string fact_sentence(uint64_t index);

// Text that the tokenizer encodes (BOS included, as an anchor's text is encoded) to exactly `tokens` tokens,
// built from fact sentences; when no word sequence lands exactly, the closest count below. tokens >= 2.
std::string anchor_text_of_length(const Tokenizer& tok, int32_t tokens, uint64_t seed);

// `n` distinct snippets (one to three fact sentences each).
std::vector<std::string> snippet_texts(int32_t n, uint64_t seed);

// A stable fact for the functional metrics: an anchor text stating it, and probes whose correct continuation is
// `answer` (" Max" after "Lily has a dog named").
struct FactProbe {
  std::string anchor_text;
  std::vector<std::string> probes;  // prompts
  std::string answer;               // the continuation the anchor states (leading space included)
};
// `n` facts (at most 20 distinct templates x names).
std::vector<FactProbe> fact_probes(int32_t n);

}  // namespace pagoda::anchorbench
