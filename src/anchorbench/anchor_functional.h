// What an anchor does to the model's distribution (the functional half of the anchor benchmark; meant for
// stories260K, the one trained model in ../shared): stable facts, attention mass on the anchor by distance, drift
// when the anchor is removed, continuity across requests and engine restarts, and how fast a revocation takes
// effect under load. Every measurement runs real signed anchors through the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anchorbench/anchor_bench.h"

namespace pagoda::anchorbench {

// Stable facts: per fact and probe, the log-probability of the answer's tokens (teacher-forced) with the anchor,
// without it, and with the anchor's text as a plain prefix; whether the greedy next token is the answer's first.
struct FactResult {
  int32_t facts = 0;
  int32_t probes = 0;
  double mean_logprob_anchor = 0, mean_logprob_none = 0, mean_logprob_text = 0;  // per answer token
  double top1_anchor = 0, top1_none = 0, top1_text = 0;                          // hit rates
  int32_t gate0_bitwise = 0;  // probes whose every logit with the anchor equals the plain-prefix one, bit for bit
};

// Mean attention mass on the anchor's keys, by distance bucket (bucket b: distances [2^b, 2^(b+1))), per layer
// (averaged over heads), and per layer and head over generated tokens.
struct AttentionResult {
  int32_t n_layer = 0, n_head = 0;
  std::vector<int64_t> bucket_queries;       // [buckets]
  std::vector<double> bucket_layer_mass;     // [buckets, n_layer]
  std::vector<double> generated_head_mass;   // [n_layer, n_head]
  int64_t generated_queries = 0;
};

// KL(p_anchor || p_none) of the next-token distributions at each of `positions` generated positions (the tokens
// greedily generated with the anchor, fed to both), averaged over the facts' first probes.
struct DriftResult {
  std::vector<double> kl_by_position;  // [positions]
  double mean_kl = 0;
  int32_t sequences = 0;
};

// The same anchored request in independent requests (with other traffic between) and after the engine is
// destroyed and the anchor verified and pinned again in a new one: logits compared bit for bit.
struct ContinuityResult {
  int32_t compared = 0;
  int32_t identical_across_requests = 0;
  int32_t identical_across_restart = 0;
};

// Revocations under load: C requests decoding with the anchor, then the revocation; per revocation the engine's
// steps after the step running at arrival that still attended to the anchor (goal 0), and the time from arrival to
// the end of the last attending step.
struct RevocationResult {
  int32_t revocations = 0;
  int32_t concurrency = 0;
  loadgen::LatencySummary steps_after_arrival;
  loadgen::LatencySummary ms_to_last_attended;
  int64_t max_steps_after_arrival = 0;
  int32_t requests_ended_revoked = 0;  // of revocations x concurrency requests
};

struct FunctionalOptions {
  int32_t facts = 20;
  int32_t drift_positions = 64;
  int32_t revocations = 100;
  int32_t revocation_concurrency = 16;
};

Result<FactResult> measure_facts(const BenchSetup& setup, const FunctionalOptions& o);
Result<AttentionResult> measure_attention(const BenchSetup& setup, const FunctionalOptions& o);
Result<DriftResult> measure_drift(const BenchSetup& setup, const FunctionalOptions& o);
Result<ContinuityResult> measure_continuity(const BenchSetup& setup, const FunctionalOptions& o);
Result<RevocationResult> measure_revocation(const BenchSetup& setup, const FunctionalOptions& o);

}  // namespace pagoda::anchorbench
