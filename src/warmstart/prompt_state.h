// What warm start needs from one cold prefill: every layer's K/V and queries (after RoPE) and the last token's
// logits. Computed with the ordinary forward pass into an F32 contiguous cache, so the numbers are the engine's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"
#include "model/transformer.h"
#include "util/result.h"
#include "util/thread_pool.h"

namespace pagoda::warmstart {

struct PromptState {
  int64_t n_tokens = 0;
  std::vector<float> k;       // [n_layer, n_tokens, kv_dim] after RoPE: what the cache holds
  std::vector<float> v;       // [n_layer, n_tokens, kv_dim]
  std::vector<float> q;       // [n_layer, n_tokens, q_dim] after RoPE
  std::vector<float> logits;  // [n_vocab] of the last token
};

// Runs `tokens` (at least one) from position 0 and keeps their K/V and queries.
Result<PromptState> run_prompt(const Model& model, std::span<const int32_t> tokens, ThreadPool& pool,
                               TransformerWorkspace& ws);

}  // namespace pagoda::warmstart
