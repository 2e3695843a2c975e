// The layers of a small batch (decode steps) as one parallel region: every thread of the pool runs every layer on
// its share of the rows, and the threads meet at a barrier only where a step needs what another thread computed.
//
// Why: a decode step of SmolLM2 streams 92 MiB of weights through ~150 matmuls. Run as one pool.run per matmul,
// each costs a start signal and a finish signal between the cores, and the steps between the matmuls (norms,
// rotary, K/V stores, SwiGLU, residual adds) ran on the calling thread alone, reading what the other thread wrote.
// Where the two vCPUs sit on different dies a signal costs ~400 ns, and decode reached only 70-77% of the roofline
// (docs/PERFORMANCE.md). Here a layer costs five barriers (one hop each), and each thread does the in-between steps
// on its own rows, or, where a step needs the whole vector (a norm, the activations' quantization), computes it
// itself:
//   1. norm(x) and the Q/K/V matmuls, split by whole heads; each thread adds the biases, normalises, rotates and
//      stores the K/V of its own heads;                                                       barrier
//   2. attention: every thread runs its share of the kernel's jobs (paged_attention_in_region); barrier
//   3. the output projection, split by rows; each thread adds its rows into the residual;      barrier
//   4. norm(x), gate and up, split by the same feed-forward rows; SwiGLU (or GELU) on them;     barrier
//   5. the down projection, split by rows; each thread adds its rows into the residual;        barrier
// then the output norm and head. Every value is computed by the same function on the same inputs as in the
// region-per-step path (transformer.cpp), so the bits are the same (tests/unit/model/transformer_team_test.cpp).
#pragma once

#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "model/forward_batch.h"
#include "model/model.h"
#include "model/transformer.h"
#include "util/thread_pool.h"

namespace pagoda {

// Whether a batch of num_tokens tokens runs here: small batches (the matmuls split their rows statically), the
// fused attention, none of the instrumented inputs (attention probe, override, query capture, layer mask), and
// every layer's Q/K/V kernels taking whole heads.
bool transformer_team_applies(const Model& model, const ForwardBatch& batch, int64_t num_tokens, AttentionImpl impl);

// The layers, output norm and head of transformer_forward_batch, after it has checked the batch, grown the
// workspace, embedded the tokens into ws.x and computed the rotary angles. `args` holds the attention metadata
// (all but the layer's caches). logits: [logit_rows, n_vocab], already sized.
void transformer_forward_team(const Model& model, const ForwardBatch& batch, const KvStorage& kv,
                              TransformerWorkspace& ws, ThreadPool& pool, const PagedAttentionArgs& args,
                              std::vector<float>& logits);

}  // namespace pagoda
