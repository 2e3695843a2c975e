// Compression: a prompt's exact prefix cache (every token but the last) -> m slots per layer and KV head, fitted
// per prompt by attention matching (docs/warm-start.md §2.1):
//   - reference queries: the queries of the prompt's last R tokens from every head of the KV group, each moved by
//     RoPE to the last position (the query of the token about to run, and directions later tokens ask from);
//   - slot j summarises the j-th of m contiguous segments of the prefix; its key is the segment's key with the most
//     attention mass from the reference queries, rotated to position j;
//   - its bias is the least-squares fit (in log space) of the segment's absolute attention mass, so slots plus the
//     last token's own key share the softmax as the full cache does;
//   - values solve ridge least squares for the reference queries' exact attention outputs over the prefix,
//     regularised toward each segment's mass-weighted mean value.
// With m = prefix length and R = 1 it reproduces the exact cache (tested).
#pragma once

#include "util/result.h"
#include "warmstart/prompt_state.h"
#include "warmstart/slot_cache.h"

namespace pagoda::warmstart {

struct SummaryOptions {
  int64_t m = 16;               // slots per layer and KV head
  int64_t ref_positions = 16;   // R: reference query positions (the last R prompt tokens)
  double value_ridge = 1e-3;    // lambda, relative to trace(A^T A) / m
};

// Fails when the prefix (n_tokens - 1) is shorter than m.
Result<SlotCache> summarize_prefix(const ModelHParams& hp, const PromptState& state, const SummaryOptions& options);

// The whole exact prefix as slots (bias 0, keys at their own positions): baseline (4), a neighbour's cache as-is.
SlotCache exact_prefix_slots(const ModelHParams& hp, const PromptState& state);

// Rotates one head's vector by `delta` positions (RoPE families; nothing for learned positions).
void rotate_head(const ModelHParams& hp, int64_t delta, float* head);

}  // namespace pagoda::warmstart
