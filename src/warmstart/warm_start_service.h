// Warm start as the engine serves it (`--warm-start MAPS --warm-start-library DIR --warm-start-threshold TAU`):
// for an eligible request, embed the prompt, find the nearest library entry, and on a hit (cosine >= tau) project
// its summary and run the prompt's last token over the m projected slots; the token sampled from those logits is
// the request's first token. The engine emits it at admission and then runs the exact prefill of prompt + that
// token as ordinary scheduled work, so token 2 onward comes from the exact cache: the output from token 2 on is
// bitwise that of a cold request whose first token is forced to the same token (tests/unit/engine).
// Thread-safe: one decision at a time (decision_mu_), so engines sharing a service, or its worker
// (warm_start_worker.h) and a caller, never race on its workspace; the statistics have their own lock, held only
// to copy them, so reading them never waits for a decision.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "model/model.h"
#include "model/transformer.h"
#include "util/result.h"
#include "util/thread_pool.h"
#include "warmstart/library.h"
#include "warmstart/warm_start_maps.h"

namespace pagoda::warmstart {

struct WarmStartConfig {
  std::string maps_path;    // from `pagoda warmstart fit`
  std::string library_dir;  // from `pagoda warmstart library`
  double threshold = 0.9;   // tau: cosine similarity needed for a hit
  uint64_t library_bytes = 256ull << 20;
};

struct WarmStartDecision {
  bool hit = false;
  float similarity = 0;  // of the nearest entry (0 for an empty library)
  int32_t token = -1;    // on a hit: the first token
  std::vector<float> logits;  // on a hit: the warm logits behind it
  double search_s = 0, projection_s = 0, forward_s = 0;
};

struct WarmStartStats {
  int64_t hits = 0;
  int64_t misses = 0;
  double search_s = 0;
  double projection_s = 0;
  double forward_s = 0;
};

class WarmStartService {
 public:
  static Result<std::unique_ptr<WarmStartService>> open(const Model& model, const WarmStartConfig& config);

  // Prompts shorter than m + 1 tokens miss without a search.
  Result<WarmStartDecision> first_token(std::span<const int32_t> prompt, const SamplingParams& sampling,
                                        ThreadPool& pool);
  WarmStartStats stats() const;
  // Holds every decision back while the lock lives (a caller that must see no decision run: tests, maintenance).
  // An engine whose only work is pending decisions sleeps until one lands: do not step it synchronously from the
  // thread that holds this lock with nothing else running.
  [[nodiscard]] std::unique_lock<std::mutex> hold_decisions() { return std::unique_lock(decision_mu_); }
  const WarmStartConfig& config() const { return config_; }
  int64_t library_size() const { return library_.size(); }
  int64_t slots() const { return maps_.summary.m; }
  std::string describe() const;

 private:
  WarmStartService(const Model& model, WarmStartConfig config, WarmStartMaps maps, WarmStartLibrary library)
      : model_(model), config_(std::move(config)), maps_(std::move(maps)), library_(std::move(library)) {}

  const Model& model_;
  WarmStartConfig config_;
  WarmStartMaps maps_;
  WarmStartLibrary library_;
  TransformerWorkspace ws_;
  std::mutex decision_mu_;  // guards ws_ and the library (its index is built lazily)
  mutable std::mutex stats_mu_;
  WarmStartStats stats_;  // guarded by stats_mu_
};

}  // namespace pagoda::warmstart
