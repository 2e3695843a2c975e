// The engine's state of one sequence (one choice of one request): its tokens, how many have K/V in the pool,
// and its sampling and text state.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/request.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "grammar/grammar_matcher.h"
#include "kv/block_key.h"
#include "kv/block_types.h"
#include "tokenizer/streaming_detokenizer.h"

namespace pagoda {

struct RequestState;
struct TenantAccount;

struct Sequence {
  enum class State { kWaiting, kRunning, kFinished };

  Sequence(SeqId id, RequestState* request, int32_t index, const SamplingParams& sampling, const Tokenizer& tok,
           std::vector<std::string> stops)
      : id(id), request(request), index(index), sampler(sampling), detokenizer(tok), stop(std::move(stops)) {}

  SeqId id;
  RequestState* request;  // owner
  int32_t index;          // choice index within the request
  State state = State::kWaiting;

  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int64_t prompt_len = 0;
  int64_t num_computed = 0;  // leading tokens whose K/V are in the pool
  int64_t cached_prompt_tokens = -1;  // at its first admission: prompt tokens found cached (-1: not admitted yet)
  int32_t priority = 0;
  uint64_t arrival = 0;         // first-come-first-served order of the request
  uint64_t admitted = 0;        // order of the latest admission; preemption picks the largest
  uint64_t scheduled_step = 0;  // the step that last scheduled this sequence
  uint64_t yielded_step = 0;    // the step that last left its cut prefill chunk out for a short prefill (0: none)
  // Admission order (engine/scheduler.h "aging"): set when the sequence first waits, kept through preemptions.
  bool has_wait_key = false;
  int64_t wait_key_ns = 0;
  TenantAccount* tenant = nullptr;  // the tenant's limits and holdings; null: a request without configured limits
  const CacheNamespace* ns = nullptr;
  // A pinned prefix (a verified anchor's sequence) whose blocks this sequence starts from: its tokens begin
  // `tokens`, and admission shares its blocks instead of computing them.
  std::optional<SeqId> prefix;
  bool text_done = false;  // all text emitted (a stop string matched, or finished)

  Sampler sampler;
  StreamingDetokenizer detokenizer;
  StopMatcher stop;
  // With a structured-output grammar: where the generated text stands in it.
  std::optional<grammar::MatcherState> grammar_state;
  // Warm start missed: what to say on the first token event (engine/warm start).
  std::optional<StreamEvent> warm_start_event;

  int64_t num_generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  // Tokens still to be computed before the next sample (1 for a decode, more while prefilling).
  int64_t num_pending() const { return static_cast<int64_t>(tokens.size()) - num_computed; }
};

}  // namespace pagoda
