// The memory task run through the engine (pagoda bench anchor-memory; docs/anchor-benchmark.md): each question of
// anchorbench/memory_task.h asked as a chat turn through the model's own template, in each mode, answered greedily,
// and scored by normalised match; beside it the teacher-forced log-probability of the right answer.
//
// Modes (where the anchor's facts are for a question):
//   none           nowhere: the question alone
//   text           pasted as the system message
//   anchor         a verified anchor pinned in the pool (its text, BOS first, as `pagoda serve` tokenizes anchors),
//                  followed by the templated question: what a request naming the anchor's digest gets
//   anchor-layers  the same anchor visible only to some layers (one entry per mask)
//   anchor-system  emulated: what an anchor would give if it held the templated system turn (the `text` mode's
//                  system message, special tokens parsed) instead of plain text before the template. Today's anchor
//                  protocol cannot express this (an anchor's text is tokenized as plain text, BOS first), so the
//                  engine pins those tokens directly under an unsigned name; the tokens of anchor + question are
//                  then exactly the text mode's, so its replies must equal text's (Gate 0, counted).
//   rag            BM25 (anchorbench/bm25.h) over one store: every anchor's facts, one per chunk, and the
//                  distractors; queried with the question; the top k chunks pasted as the system message
//   rag-user       the same store, searched among the asking user's own chunks and the distractors (a store
//                  partitioned per user, as a real memory service keeps it)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anchorbench/bench_anchor_signer.h"
#include "anchorbench/memory_task.h"
#include "api/chat_prompt.h"
#include "engine/engine.h"
#include "model/model.h"
#include "util/confidence_interval.h"

namespace pagoda::anchorbench {

using pagoda::mean_interval;
using pagoda::MeanInterval;
using pagoda::Proportion;
using pagoda::wilson_proportion;

struct MemoryMode {
  std::string name;                     // none, text, anchor, anchor-layers, rag, rag-user
  std::string mask;                     // anchor-layers: the visible layers as given ("0-14")
  std::vector<uint8_t> visible_layers;  // anchor-layers: [n_layer]
};

struct MemoryAnswer {
  int32_t question = 0;
  std::string output;  // the greedy reply (up to max_tokens, or to the end of the turn)
  bool correct = false;
  bool prior = false;          // counterfactual: the reply states the true fact
  double answer_logprob = 0;   // sum over the answer's tokens, teacher-forced as the reply's first tokens
  bool retrieved = false;      // rag modes: the fact that answers the question was among the chunks pasted
  int32_t prompt_tokens = 0;   // the sequence before the reply, anchor included
};

struct MemoryModeResult {
  MemoryMode mode;
  Proportion accuracy;              // every question
  Proportion user_accuracy;         // questions on user facts
  Proportion counterfactual_follow; // counterfactual questions answered as the anchor states
  Proportion counterfactual_prior;  // counterfactual questions answered with the true fact
  MeanInterval answer_logprob;      // nats, summed over the answer's tokens
  Proportion retrieval_hits;        // rag modes: n = questions; others n = 0
  double mean_prompt_tokens = 0;
  double ttft_ms_median = 0;        // first question of each anchor alone on the engine, cold prefix cache
  int64_t anchor_kv_bytes = 0;      // anchor modes: K/V bytes the anchors' tokens take in every layer
  int64_t anchor_kv_bytes_hidden = 0;  // anchor-layers: of those, the bytes in layers that do not see them
  std::vector<MemoryAnswer> answers;
};

struct MemoryEvalOptions {
  int32_t max_tokens = 32;
  int32_t rag_k = 3;
  EngineConfig engine;  // prefix caching is on in every mode
};

// Runs one mode. The signer verifies the anchors (anchor modes); the chat prompt is the model's template.
Result<MemoryModeResult> evaluate_memory_mode(const Model& model, const ChatPrompt& chat, BenchAnchorSigner& signer,
                                              const MemoryTask& task, const MemoryMode& mode,
                                              const MemoryEvalOptions& options);

}  // namespace pagoda::anchorbench
