// What a caller submits to the engine and what comes back on the request's stream.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "grammar/compiled_grammar.h"

namespace pagoda {

struct GenerationRequest {
  std::string id;                 // the caller's id, echoed in outputs
  std::vector<int32_t> prompt;    // token ids (already tokenized, BOS included when the model wants one)
  int64_t max_tokens = 16;        // new tokens per choice
  SamplingParams sampling;        // its seed is ignored: see `seed`
  std::optional<uint64_t> seed;   // per-request seed; unset = drawn from the engine's seed sequence
  std::vector<std::string> stop;  // stop strings: generation ends before the first occurrence in the text
  bool ignore_eos = false;
  int32_t n = 1;               // choices, forked from one prefill and sharing the prompt's blocks
  int32_t logprobs = -1;       // -1: none; k >= 0: the chosen token's logprob and the top k alternatives
  int32_t priority = 0;        // lower runs first; equal priorities are first-come-first-served
  std::string cache_salt;      // separates prefix-cache namespaces: only requests with equal salts share blocks
  std::string tenant;          // set by the server from the API key; part of the cache namespace like the salt
  bool return_logits = false;  // attach each sampled position's raw logits to its event (tests, debugging)
  // Digest of an active anchor: the sequence is the anchor's tokens, then `prompt` (which then carries no BOS of
  // its own), and starts from the anchor's pinned blocks. Empty: none.
  std::string anchor;
  // Structured output: every sampled token must continue this grammar (masks before sampling; the choice ends
  // with "stop" when the grammar allows nothing more). nullptr: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // The first generated token is this one instead of a sampled one (the prompt's logits are computed but unused).
  // The reference of warm start's guarantee, and a tool for tests. Must be a vocabulary id.
  std::optional<int32_t> forced_first_token;
};

// What warm start did for a request (engine/warmstart): only on the first token event of choice 0.
enum class WarmStartUse { kOff, kMiss, kHit };

// kAnchorRevoked: the verified anchor the request started from was revoked (or expired) while it ran.
enum class FinishReason { kNone, kStop, kLength, kCancelled, kError, kAnchorRevoked };
const char* finish_reason_name(FinishReason r);

// One event of one choice: a sampled token, or the end of the choice.
struct StreamEvent {
  enum class Kind { kToken, kFinished };
  Kind kind = Kind::kToken;
  int32_t index = 0;  // choice index, 0 .. n-1
  // kToken
  int32_t token = -1;
  std::string text;  // text that became final with this token (may be empty; stop-string prefixes are held back)
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;
  std::vector<float> logits;  // raw logits behind this token, only with return_logits
  WarmStartUse warm_start = WarmStartUse::kOff;  // first token of choice 0: whether it came from warm start
  float warm_start_similarity = 0;               // with kMiss/kHit: the nearest library entry's cosine
  // First token of a choice admitted from the waiting queue: prompt tokens whose K/V it found cached (prefix cache
  // or a pinned anchor) instead of computing them; -1 otherwise (later tokens, forked choices).
  int64_t cached_prompt_tokens = -1;
  // kFinished
  FinishReason finish = FinishReason::kNone;
  std::string stop_string;  // with kStop: the request's stop string that ended the choice ("" for EOS, grammar)
  std::string error;  // with kError
};

}  // namespace pagoda
