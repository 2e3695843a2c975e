// Verified anchors for the commands that run an engine (serve, batch): the anchor service over a started engine,
// with the state restored and re-verified, anchors active before a restart pinned again, and each --anchor file
// verified and activated. Any refusal is an error that stops the start.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/model.h"
#include "server/anchor_service.h"
#include "util/result.h"

namespace pagoda::cli {

struct AnchorSetup {
  std::string trust_root;      // --anchor-trust-root
  std::string state_dir;       // --anchor-state-dir (empty: nothing persists)
  std::vector<std::string> files;  // --anchor
  int32_t max_tokens = 512;    // --anchor-max-tokens
};

// Precondition: the engine's step thread runs (activation waits for its prefill).
Result<std::unique_ptr<AnchorService>> start_anchor_service(const AnchorSetup& setup, const std::string& model_path,
                                                            const Model& model, Engine& engine);

}  // namespace pagoda::cli
