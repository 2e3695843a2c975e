// The warm-start evaluation data: story openings in stories260K's domain (TinyStories), generated from templates
// with slot fillers (names, objects, places, events, animals) and paraphrase operators (synonyms, sentence
// reordering, clause insertion, length changes), plus adversarial near-duplicates that share most words but differ
// in meaning (roles swapped, a negation: the PAWS idea). Deterministic for a seed; split into train and test by
// template, never by pair. Prompt lengths are spread from about 32 to 480 tokens by the number of body sentences.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagoda::warmstart {

struct PromptPair {
  int template_id = 0;
  int instance = 0;
  bool adversarial = false;  // target differs in meaning from source
  std::string source;        // the earlier prompt (its summary is in the library)
  std::string target;        // the new prompt
  std::string continuation;  // held-out text that follows the target (quality: its log-likelihood)
  std::string answer;        // the right answer to the target's question (question-answer data; empty for stories)
};

// An extra library entry beside the test pairs' sources: an unrelated prompt, or a near miss of a target (the same
// text with the asked fact changed), so that the nearest neighbour can be wrong and a false hit has a cost.
struct LibraryDistractor {
  std::string text;
  bool near_miss = false;
  int for_pair = -1;  // index into the test split (near misses), -1 for unrelated prompts
};

struct DataOptions {
  uint64_t seed = 1;
  int instances_per_template = 10;
  int adversarial_per_template = 3;  // extra pairs per template whose target is an adversarial near-duplicate
  int max_body_sentences = 22;       // length spread: 0 .. this many body sentences
};

constexpr int kNumTemplates = 12;
constexpr int kNumTestTemplates = 4;  // templates kNumTemplates - 4 .. kNumTemplates - 1 are the test split

struct PairSplit {
  std::vector<PromptPair> train;
  std::vector<PromptPair> test;
  std::vector<LibraryDistractor> distractors;  // question-answer data only
};

PairSplit generate_pairs(const DataOptions& options);

}  // namespace pagoda::warmstart
