// `pagoda warmstart eval`: the falsification harness of docs/warm-start.md. For every test pair the target prompt's
// first-token distribution is computed by the cold path (the engine's ordinary prefill, the reference) and by each
// method below; the library holds the summaries of every test pair's source prompt, searched by embedding.
//   served            what `--warm-start` serves: projected summary on a hit (similarity >= tau), cold otherwise
//   projected:<form>  the projected summary of the nearest neighbour, hit or not (one per maps file)
//   no-projection     the neighbour's summary used as-is                                    (baseline 5)
//   oracle-summary    the target's own exact cache compressed to m slots (compression error alone)  (6)
//   oracle-summary:R=1  the same with one reference query, the next token's own (the seed's objective)
//   neighbour-kv      the neighbour's full exact prefix cache, the target's last token after it       (4)
//   neighbour-kv-blend  the same with ~15% of the prefix recomputed (CacheBlend-style)             (4)
//   response-cache    the neighbour's own first-token distribution (a semantic response cache)        (3)
//   no-cache          the last token alone, no cache                                                   (7)
//   prefix-cache      exact prefix cache on the shared token prefix (block-rounded): exact, KL 0      (2)
// Metrics per request and method: KL both ways, top-1 agreement, time to first token (embedding, search,
// projection and slot forward included), greedy agreement of the first 16 tokens with cold (token 1 from the
// method, tokens 2.. from the exact cache: the serving guarantee), the held-out continuation's log-likelihood, and
// for question-answer pairs (an `answer`) whether that greedy continuation answers right (qa_data.h's rule).
// The library holds the test sources plus the distractors given (unrelated prompts, near misses of targets).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/model.h"
#include "util/result.h"
#include "warmstart/paraphrase_data.h"
#include "warmstart/warm_start_maps.h"

namespace pagoda::warmstart {

struct EvalOptions {
  double tau = 0.9;             // the served method's similarity threshold
  bool warm_start_off = false;  // the control: `served` never uses warm start (its KL must be exactly 0)
  int quality_tokens = 16;
  int timing_repeats = 3;  // median of this many timings per request and method
  int threads = 1;
  int prefix_block = 16;  // the prefix cache's block size (hits are whole blocks)
  int blend_recompute_percent = 15;  // neighbour-kv-blend: share of the prefix recomputed
  // The methods to run: names from kEvalMethods ("projected" stands for every projected:<form>); empty means all.
  // A large run that asks one question (e.g. oracle-summary:R=1 against cold) runs only that method. The cold
  // reference and the library search run always.
  std::vector<std::string> methods;
};

// Every method, in the order they run and are reported.
inline const std::vector<std::string> kEvalMethods = {
    "served",         "projected",      "no-projection", "oracle-summary", "oracle-summary:R=1", "neighbour-kv",
    "neighbour-kv-blend", "response-cache", "no-cache",  "prefix-cache"};

struct MethodOutcome {
  std::string method;
  double kl_method_cold = 0;  // KL(p_method || p_cold)
  double kl_cold_method = 0;  // KL(p_cold || p_method)
  bool top1_agree = false;
  double ttft_s = 0;
  int agree_tokens = 0;      // of quality_tokens, greedy, against cold
  double continuation_ll = 0;  // sum of log-probabilities of the continuation
  bool correct = false;        // question-answer pairs: the greedy continuation answers right
};

struct RequestOutcome {
  int template_id = 0;
  int instance = 0;
  bool adversarial = false;
  int64_t target_tokens = 0;
  int64_t neighbour_tokens = 0;
  float similarity = 0;
  bool neighbour_is_own_source = false;
  std::string neighbour_kind;  // "own-source", "other-source", "near-miss" or "unrelated" (library distractors)
  bool has_answer = false;     // a question-answer pair
  bool cold_correct = false;   // the cold greedy continuation answers right
  bool hit = false;  // similarity >= tau
  double cold_ttft_s = 0;
  double cold_token2_s = 0;    // cold prefill + one decode step
  double served_token2_s = 0;  // served first token (warm path on a hit) + exact prefill + one decode step
  int64_t continuation_tokens = 0;
  double cold_continuation_ll = 0;
  std::vector<MethodOutcome> methods;
};

struct EvalResult {
  std::vector<std::string> methods;
  std::vector<RequestOutcome> requests;
  int64_t skipped = 0;  // pairs whose prompts were too short for m slots or too long for the context
  int64_t library_entries = 0;  // sources plus distractors
  double library_seconds = 0;
  int64_t library_bytes = 0;
  int64_t summary_bytes = 0;       // one entry's summary; 0 when no selected method needed the summaries
  int64_t full_kv_bytes_mean = 0;  // the exact F16 cache of a mean source prompt, for comparison
};

// All maps must share the summary settings (m, R, ridge). progress(done, total) after each request.
Result<EvalResult> evaluate(const Model& model, const std::vector<PromptPair>& test,
                            const std::vector<LibraryDistractor>& distractors, const std::vector<WarmStartMaps>& maps,
                            const EvalOptions& options, const std::function<void(int64_t, int64_t)>& progress = {});

// Search cost against library size, over `entries` random unit embeddings of dimension `dim` (no summaries); the
// queries are noisy copies of random entries (cosine about 0.9 to their source), as a paraphrase's would be.
struct SearchScaling {
  int64_t entries = 0;
  double exact_ms = 0;        // median of one exact scan
  double index_build_s = 0;   // building the HNSW index
  double approximate_ms = 0;  // median of one HNSW search
  double recall_at_1 = 0;     // HNSW's answer equals the exact one
};
std::vector<SearchScaling> measure_search_scaling(int64_t dim, const std::vector<int64_t>& sizes);

// Softmax-based helpers (exposed for tests).
double kl_divergence(const std::vector<float>& logits_p, const std::vector<float>& logits_q);
int32_t argmax(const std::vector<float>& logits);

}  // namespace pagoda::warmstart
