// The anchor benchmark's measurements on an in-process engine (pagoda bench anchors; docs/anchor-benchmark.md):
// one cell = one mode, anchor length A, context length T and concurrency C, run as waves of C requests submitted
// together, with the same requests (same seeds) in every mode. Also the pool-capacity measurement (how many
// sequences run at once before the pool is full).
//
// Modes (what the anchor's text is to a request):
//   none                 absent: the request is BOS + its own T tokens
//   text                 A tokens of anchor text pasted before the request's tokens, prefix cache off
//   text-cached          the same with the evictable prefix cache on, primed by an earlier request (warm)
//   text-cached-evicted  the same after unrelated traffic pushed the text's blocks out of the cache before each wave
//   anchor               a verified anchor pinned in the pool; the request names its digest
//   anchor-layers        the same, visible only to the layers of BenchSetup::visible_layers
//   rag                  the text retrieved per request from a store of snippets (SnippetStore), then pasted as
//                        text with the prefix cache on; retrieval is timed on its own
//   peer                 llama-server with the text as a cached prompt prefix (cache_prompt): HTTP only, in
//                        http_cell.h, which also runs the other modes through `pagoda serve`
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "anchorbench/bench_anchor_signer.h"
#include "anchorbench/snippet_store.h"
#include "engine/engine.h"
#include "loadgen/latency_stats.h"
#include "model/model.h"

namespace pagoda::anchorbench {

enum class BenchMode { kNone, kText, kTextCached, kTextCachedEvicted, kAnchor, kAnchorLayers, kRag, kPeer };
const char* bench_mode_name(BenchMode m);
// One name; "text-cached" means both text-cached and text-cached-evicted.
Result<std::vector<BenchMode>> parse_bench_modes(const std::vector<std::string>& names);
bool mode_has_anchor(BenchMode m);  // anchor, anchor-layers (a pinned anchor)
bool mode_uses_anchor_text(BenchMode m);  // every mode but none

struct BenchSetup {
  const Model* model = nullptr;
  EngineConfig engine;                 // per cell; prefix caching and the recheck cadence are set per mode
  std::vector<uint8_t> visible_layers; // anchor-layers: [n_layer] 1 where the anchor is visible
  BenchAnchorSigner* signer = nullptr; // anchor modes
  const SnippetStore* store = nullptr; // rag: holds the anchor text among its snippets
  uint64_t seed = 1;
};

struct CellSpec {
  BenchMode mode = BenchMode::kNone;
  int32_t anchor_tokens = 0;  // A (BOS included); ignored by none
  int64_t context_tokens = 512;
  int32_t concurrency = 1;
  int64_t gen_tokens = 64;
  int32_t waves = 3;
  AnchorRecheckCadence cadence = AnchorRecheckCadence::kSession;
};

struct CellResult {
  CellSpec spec;
  std::string transport = "in-process";  // or "http" (http_cell.h): then the engine-side fields below stay 0
  std::string kv_dtype;                  // http: what the server was started with is not known here: ""

  int32_t anchor_tokens = 0;  // the anchor text's actual token count (0 for none)
  int64_t requests = 0;
  loadgen::LatencySummary ttft_ms, itl_ms, e2e_ms;
  double output_tok_s = 0;   // every generated token over the waves' time
  double decode_tok_s = 0;   // tokens generated after the wave's last first token, over the time after it
  int64_t prefill_tokens_computed = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t preemptions = 0;
  // KV bytes per request, measured: (peak blocks in use during the wave - pinned blocks) x block bytes / C.
  double kv_bytes_per_request = 0;
  // The formula 2 * L * N_kv * d_h * tokens * b for the request's own tokens (T + BOS for none, T + generated)
  // and, for the text modes, the anchor's A tokens too; beside it, the anchor's own 2 * L * N_kv * d_h * A * b.
  double kv_bytes_per_request_formula = 0;
  double anchor_kv_bytes_formula = 0;
  uint64_t pinned_bytes = 0;     // blocks pinned for the anchor (anchor modes)
  uint64_t block_bytes = 0;
  double anchor_verify_ms = 0;   // registration: envelope verification
  double anchor_prefill_ms = 0;  // registration: the pinned prefill
  loadgen::LatencySummary retrieval_ms;  // rag
  double retrieval_hit_rate = 0;         // rag: share of retrievals that found the anchor's snippet
  int64_t rechecks = 0;                  // cadence ablation
  double recheck_seconds = 0;
  // Invariant: the measured per-request blocks against the block count the formula implies (ceil to blocks).
  int64_t expected_blocks_per_request = 0;
  double measured_blocks_per_request = 0;
};

using ProgressFn = std::function<void(const std::string&)>;

Result<CellResult> run_cell(const BenchSetup& setup, const CellSpec& spec, const ProgressFn& progress = {});

// Open-loop load: `requests` requests of the cell's mode, A and T, each generating cell.gen_tokens, arriving at
// the times of a Poisson process of `rate` per second (seeded by the run's seed and `round`, so every mode of a
// round sees the same arrival times), on a fresh engine after one warm-up request. A request is good when its TTFT
// <= slo_ttft_ms and the 99th percentile of its own inter-token latencies <= slo_itl_ms; goodput is good requests
// per second of the run (first arrival to last token). The cell's concurrency and waves are not used.
// Eviction traffic: with unrelated_share s > 0, the Poisson process of `rate` carries requests / (1 - s) arrivals,
// a seeded shuffle makes `requests` of them the mode's and the rest unrelated requests (BOS and A + T tokens of
// their own, nothing shared, the same gen), which compete for the pool (--kv-cache-mem) and push the mode's cached
// text out of it when the pool is small. The latencies, the goodput and the cached tokens are the mode's requests'.
struct ArrivalSpec {
  CellSpec cell;
  double rate = 1.0;
  int32_t requests = 32;
  uint64_t round = 0;
  double slo_ttft_ms = 1000, slo_itl_ms = 200;
  double unrelated_share = 0;  // in [0, 0.95]
};
struct ArrivalResult {
  ArrivalSpec spec;
  int32_t requests = 0;
  int32_t good = 0;
  double seconds = 0;
  double goodput_req_s = 0;
  double output_tok_s = 0;
  int64_t tokens = 0;
  int32_t peak_running = 0;
  loadgen::LatencySummary ttft_ms, itl_ms, e2e_ms;
  // The mode's requests: prompt tokens found cached at admission (prefix cache or the pinned anchor), mean per
  // request, and the share of requests that found all of the anchor's text (whole blocks of it) cached.
  double cached_prompt_tokens_mean = 0;
  double text_fully_cached_share = 0;
  int32_t unrelated_requests = 0;
  loadgen::LatencySummary unrelated_ttft_ms;
  int64_t preemptions = 0;  // the engine's, over the run (all requests)
};
Result<ArrivalResult> run_arrival_cell(const BenchSetup& setup, const ArrivalSpec& spec);

// How many sequences of A + T prompt tokens generating `gen` tokens run at once on a pool of `num_blocks`
// blocks: all submitted together (max-num-seqs unbounded), peak running sequences measured; and the count the
// block arithmetic predicts.
struct CapacityResult {
  BenchMode mode = BenchMode::kNone;
  int32_t anchor_tokens = 0;
  int64_t context_tokens = 0;
  int64_t gen_tokens = 0;
  int64_t num_blocks = 0;
  int32_t pinned_blocks = 0;
  int32_t peak_running = 0;
  int32_t predicted = 0;  // floor((blocks - pinned - watermark) / blocks per sequence at its full length)
  // The same with each sequence at its admission length (prompt + the first generated token): the peak is reached at
  // admission, before sequences grow (then preemption trims it), so predicted <= peak <= predicted_at_admission.
  int32_t predicted_at_admission = 0;
  int64_t preemptions = 0;
};
Result<CapacityResult> measure_capacity(const BenchSetup& setup, BenchMode mode, int32_t anchor_tokens,
                                        int64_t context_tokens, int64_t gen_tokens, int64_t num_blocks);

// Request `request`'s own n tokens: the same in every mode and transport (seeded by the index), ids past the
// control tokens. And the prompt of the none mode before them (BOS).
std::vector<int32_t> bench_own_tokens(const Model& m, uint64_t seed, int64_t request, int64_t n);
std::vector<int32_t> bench_bos_tokens(const Model& m);

// The anchor text a run uses for length A (deterministic), and the rag query that should retrieve it.
std::string bench_anchor_text(const Model& model, int32_t anchor_tokens, uint64_t seed);
std::string rag_query_for(const std::string& anchor_text);

}  // namespace pagoda::anchorbench
