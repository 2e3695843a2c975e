// Question-answer data for warm start (docs/warm-start.md §3.2): prompts whose next tokens depend on the prompt's
// content. Each prompt states six facts about a person (a pet's name, a favourite colour, a home town, a best
// friend, a favourite food, a job), neutral filler sentences for length, then a question about one fact and the
// start of its answer, so the next token is the answer itself:
//   "... Question: Where does Lily live?\nAnswer: Lily lives in"  ->  " Oslo"
// A paraphrase pair states the same facts in other words (each fact has three phrasings; facts shuffled, synonyms,
// an inserted clause, one filler more or less); its target's answer equals its source's. A near-miss pair's target
// is its source's rendering with the asked fact's value changed: the words are almost all shared, the answer is not.
// Templates are (framing x asked fact): 2 x 6 = 12; the last 4 are the test split. Library distractors per test
// pair: one unrelated prompt (another person, another question) and, for paraphrase pairs, one near miss of the
// target (a third value for the asked fact). Deterministic for a seed.
#pragma once

#include "warmstart/paraphrase_data.h"

namespace pagoda::warmstart {

struct QaDataOptions {
  uint64_t seed = 1;
  int instances_per_template = 10;  // paraphrase pairs per template
  int near_miss_per_template = 3;   // extra pairs per template whose target is a near miss (another answer)
  int max_filler_sentences = 20;    // length spread: 0 .. this many filler sentences
};

constexpr int kNumQaTemplates = 12;
constexpr int kNumQaTestTemplates = 4;

PairSplit generate_qa_pairs(const QaDataOptions& options);

// The answer-accuracy rule: the generated text, lower-cased with every run of non-alphanumeric characters turned
// into one space and trimmed, starts with the answer normalised the same way, followed by a space or the end.
bool answer_matches(const std::string& generated, const std::string& answer);

}  // namespace pagoda::warmstart
