// Verified anchors in a running server: the registry (src/anchor) joined to the engine. Registration verifies;
// activation pins the verified tokens in the engine and waits for the prefill; revocation and expiry tell the
// engine, which acts at its next step boundary. Also the anchor metrics. Used by the HTTP routes and by
// `serve --anchor FILE` at start-up. Thread-safe (the registry and the engine are).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "anchor/anchor_registry.h"
#include "engine/engine.h"
#include "util/result.h"

namespace pagoda {

struct ActivatedAnchor {
  AnchorRecord record;
  AnchorActivation pinned;
};

class AnchorService {
 public:
  static Result<std::unique_ptr<AnchorService>> create(AnchorRegistryConfig config, Engine& engine);
  ~AnchorService();

  Result<AnchorRecord> register_anchor(std::string_view envelope_json);
  // Errors: anchor_not_found, revoked, expired, too_large, rollback, revocation_stale, anchor_pool_full (409 over
  // HTTP). `restoring`: re-activation after a restart.
  Result<ActivatedAnchor> activate(const std::string& digest, bool restoring = false);
  Status deactivate(const std::string& digest);
  Result<RevocationOutcome> revoke(std::string_view envelope_json);
  // Anchors the new root no longer supports are revoked in the engine too.
  Result<RevocationOutcome> rotate_root(std::string_view envelope_json);
  // verify, register and activate a file (serve --anchor): any refusal is an error naming the file and the code.
  Result<ActivatedAnchor> load_file(const std::string& path);
  // After a restart: pins every anchor that was active (verified again when the registry opened).
  Status restore_active();
  // Checks expiries once a second on its own thread; an active anchor past its expiry is revoked in the engine.
  void start_expiry_ticker();

  // A request naming `digest` as `tenant`: the record (its tokens), or anchor_not_found.
  Result<AnchorRecord> resolve_for_request(const std::string& digest, const std::string& tenant);
  // A request with the anchor was accepted and submitted (metrics, requests served).
  void count_request(const std::string& digest);

  AnchorRegistry& registry() { return *registry_; }
  // Prometheus lines of the anchor metrics, with the model_name label.
  std::string render_metrics(const std::string& model_name) const;
  // Counts a refusal by its code (for pagoda:anchor_rejections_total) and passes the error on.
  Error reject(Error error);

 private:
  AnchorService(std::unique_ptr<AnchorRegistry> registry, Engine& engine)
      : registry_(std::move(registry)), engine_(engine) {}

  std::unique_ptr<AnchorRegistry> registry_;
  Engine& engine_;
  mutable std::mutex counters_mu_;
  std::map<std::string, int64_t> rejections_;  // by code
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> revocations_{0};  // anchors revoked or expired in the engine
  void revoke_in_engine(const std::vector<std::string>& digests);
  std::mutex ticker_mu_;
  std::condition_variable ticker_cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace pagoda
