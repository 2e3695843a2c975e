// The anchor benchmark's serving cells through HTTP (pagoda bench anchors --base-url / --peer-url): requests built
// like the in-process cells of anchor_bench.h (the same anchor text, own tokens of the same length), sent as
// streamed /v1/completions requests, so that the HTTP server, the JSON and the SSE stream are in every number.
// A server outlives a cell, so each cell's own tokens come from a seed unique to the run and the cell: no cell is
// served from another cell's (or an earlier run's) cached prompts.
//
// Against `pagoda serve` (HttpTarget::kPagoda):
//   none                 BOS + own tokens
//   text                 anchor text + own tokens with a per-request "cache_salt" (no prefix shared: the cache is
//                        as good as off, as vLLM's cache_salt makes it)
//   text-cached          anchor text + own tokens, one salt for the cell (warm: a warm-up wave primed it)
//   text-cached-evicted  the same after unrelated requests filled the server's whole pool before each wave
//   anchor               the anchor registered (POST /v1/anchors) and pinned (/activate) through the admin API,
//                        then named by each request ("anchor": digest), own tokens only; unpinned afterwards
//   rag                  the retrieved snippet + own tokens (retrieval on the client, timed on its own)
// anchor-layers is in-process only: the API has no per-anchor layer mask.
// Against llama-server (HttpTarget::kLlamaServer), the peer: mode `peer`, the anchor text + own tokens with
// "cache_prompt": true (its slots keep the last prompt's KV; the warm-up wave primes every slot).
//
// What the server measures is read from pagoda's /metrics before and after (prefix-cache hits, preemptions);
// KV bytes per request and capacity are engine facts, measured in-process only (CellResult fields stay 0).
#pragma once

#include <string>

#include "anchorbench/anchor_bench.h"
#include "loadgen/load_generator.h"

namespace pagoda::anchorbench {

struct HttpTarget {
  enum class Kind { kPagoda, kLlamaServer };
  Kind kind = Kind::kPagoda;
  loadgen::ClientConfig client;  // endpoint, api key, timeout; model: filled by resolve_served_model
  std::string admin_api_key;     // pagoda: the anchor endpoints (anchor mode)
  std::string run_id;            // makes cache salts and anchor lineages unique to this run
};

// GET /v1/models: the first model's id goes into target.client.model (llama-server and pagoda both list one).
Status resolve_served_model(HttpTarget& target);

// Runs one cell. Modes: none, text, text-cached, text-cached-evicted, anchor, rag on pagoda; peer on llama-server.
Result<CellResult> run_http_cell(const BenchSetup& setup, const HttpTarget& target, const CellSpec& spec,
                                 const ProgressFn& progress = {});

}  // namespace pagoda::anchorbench
