// The anchor memory task (docs/anchor-benchmark.md, "Is the content used?"): anchors that hold facts about a user
// and about the world, and chat questions whose answers are in exactly one anchor. Generated from a seed, never
// hand-picked. Two kinds of fact:
//  - user facts (a made-up name, a city, an allergy, a pet's name, a job, a colour): no model knows them, so without
//    the anchor an answer can only be a guess;
//  - counterfactual facts: a country's capital swapped for another country's ("the capital of Japan is Madrid"),
//    which contradicts what a trained model otherwise says; the share of answers that follow the anchor, against
//    the share that give the true capital, measures whether the content is used over the model's prior.
// Each anchor's counterfactual countries are its own (no two anchors swap the same country), so a question about a
// country has one right answer in the whole task.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::anchorbench {

struct MemoryQuestion {
  int32_t anchor = 0;         // the anchor that holds the answer
  std::string kind;           // "user" or "counterfactual"
  std::string fact;           // which fact: "name", "city", ..., "capital"
  std::string question;       // the user's chat message
  std::string answer;         // what the anchor states
  std::string prior_answer;   // counterfactual: the true answer (what the model says without the anchor); else ""
};

struct MemoryAnchor {
  std::vector<std::string> facts;  // one sentence each
  std::string text;                // the anchor: a heading and the facts, one per line
};

struct MemoryTask {
  std::vector<MemoryAnchor> anchors;
  std::vector<MemoryQuestion> questions;  // questions_per_anchor per anchor, anchor by anchor
  // Sentences for the rag store beside the anchors' facts: other people's facts in the same form and true facts
  // about other countries (near misses for the retriever).
  std::vector<std::string> distractors;
};

// anchors in 1..40 (the counterfactual countries run out after 40: two per anchor from a list of 80);
// questions_per_anchor in 1..10 (6 user facts, 2 counterfactuals, 2 rephrased user facts, in that order).
MemoryTask make_memory_task(uint64_t seed, int32_t anchors, int32_t questions_per_anchor, int32_t distractors);

// The normalised form of a text: lower case, every run of characters other than ASCII letters and digits one space,
// no space at either end.
std::string normalise_answer(std::string_view text);
// Whether `output` states `answer`: the normalised answer occurs in the normalised output as whole words.
bool answer_matches(std::string_view output, std::string_view answer);

}  // namespace pagoda::anchorbench
