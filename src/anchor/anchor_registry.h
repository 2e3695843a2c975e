// The anchor registry: every anchor the server has accepted, its lifecycle state, and the rollback and revocation
// memory that makes refusals permanent. It knows no engine: it hands verified token ids to its caller (the server),
// which pins them in the engine, and tells it which digests to deactivate or revoke there.
//
// States: verified -> active (pinned) -> revoked | expired | inactive. Only active anchors attach to requests.
// Persistence (--anchor-state-dir): state.json (current root, revocation version and expiry, tombstones, lineage
// high-water marks, which anchors are active) and envelopes/<digest>.json, each written atomically. A restart
// re-verifies every stored envelope; a corrupt or unreadable state stops the start with an error naming the file.
// Thread-safe: HTTP handlers call it concurrently; nothing here runs inside the engine's token loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "anchor/anchor_verifier.h"
#include "anchor/revocation.h"
#include "anchor/trust_root.h"
#include "util/result.h"

namespace pagoda {

enum class AnchorState { kVerified, kActive, kRevoked, kExpired, kInactive };
const char* anchor_state_name(AnchorState state);

struct AnchorRecord {
  std::string digest;
  AnchorPayload payload;
  std::vector<int32_t> tokens;  // the text tokenized like a prompt (BOS first when the model adds one)
  std::string envelope_json;    // as registered: re-verified when a signing key is revoked
  AnchorState state = AnchorState::kVerified;
  int32_t pinned_blocks = 0;
  int64_t requests_served = 0;
  uint64_t registered_at = 0, activated_at = 0, state_changed_at = 0;  // Unix seconds
};

struct AnchorRegistryConfig {
  std::string trust_root_path;   // the operator's pinned root (a newer one in the state folder wins)
  std::string state_dir;         // empty: nothing persists
  Sha256Digest model_digest{};   // SHA-256 of the served model file
  int32_t max_tokens = 512;      // per anchor, BOS included
  std::function<std::vector<int32_t>(const std::string&)> tokenize;  // text -> token ids, as for a prompt
  std::function<uint64_t()> now;                                     // Unix seconds (tests inject a clock)
  bool read_only = false;  // only check (pagoda anchor verify --state-dir): nothing is created or written
};

// What a revocation statement changed: digests that left the active or verified states.
struct RevocationOutcome {
  uint64_t version = 0;
  std::vector<std::string> revoked;  // every newly revoked digest
};

class AnchorRegistry {
 public:
  static Result<std::unique_ptr<AnchorRegistry>> open(AnchorRegistryConfig config);

  // Every check of the artifact (envelope, signatures, payload, model, time), then tombstones, lineage order
  // (rollback, lineage_conflict) and the token cap. 201-style success: the record. A refusal changes nothing.
  Result<AnchorRecord> register_anchor(std::string_view envelope_json);
  // Every check register_anchor makes, changing nothing: the record it would register (or the one already
  // registered under that digest, with its state).
  Result<AnchorRecord> check_anchor(std::string_view envelope_json) const;

  // The record to pin, if it may be activated now (registered, not revoked or expired, within the token cap, not
  // older than an active version of its lineage, revocation information fresh). `restoring`: the anchor was active
  // before a restart, and freeze protection (which guards new activations) does not apply. Errors:
  // anchor_not_found, revoked, expired, too_large, rollback, revocation_stale.
  Result<AnchorRecord> prepare_activation(const std::string& digest, bool restoring = false);
  // After the engine pinned it. Returns the digests of older versions of its lineage that were active and are now
  // inactive (the caller deactivates them in the engine).
  Result<std::vector<std::string>> mark_active(const std::string& digest, int32_t pinned_blocks);
  // Only an active anchor can be deactivated (error code anchor_not_active otherwise).
  Status mark_inactive(const std::string& digest);
  // Counts a request admitted with the anchor (GET /v1/anchors/{digest} reports it).
  void note_request(const std::string& digest);

  Result<RevocationOutcome> apply_revocation(std::string_view envelope_json);
  // A rotation also re-verifies every anchor under the new root: those it no longer supports are revoked (listed
  // in the outcome, whose version is the new root's).
  Result<RevocationOutcome> rotate_root(std::string_view envelope_json);
  // Active anchors whose expiry has passed become expired; their digests are returned (to revoke in the engine).
  std::vector<std::string> expire_due();

  // For a request naming `digest` as `tenant`: the active record, or anchor_not_found whether it is unknown,
  // inactive, or scoped to another tenant (a tenant cannot probe for others' anchors).
  Result<AnchorRecord> resolve_for_request(const std::string& digest, const std::string& tenant);

  std::vector<AnchorRecord> list() const;
  std::optional<AnchorRecord> get(const std::string& digest) const;
  std::vector<std::string> active_digests() const;  // after a restart: what to pin again
  uint64_t root_version() const;
  std::map<AnchorState, int64_t> count_by_state() const;

 private:
  explicit AnchorRegistry(AnchorRegistryConfig config) : config_(std::move(config)) {}
  Status load_state();
  Status persist_locked() const;  // state.json
  Status check_registrable_locked(const VerifiedAnchor& v) const;
  // register_anchor's checks; *known: the digest is registered already (the stored record is returned).
  Result<AnchorRecord> checked_record_locked(std::string_view envelope_json, uint64_t now, bool* known) const;
  // Re-verifies the anchors not yet revoked or expired (after a key revocation or a root rotation); those that no
  // longer verify are revoked and their digests returned.
  std::vector<std::string> revoke_unsupported_locked(uint64_t now);
  AnchorVerifyContext verify_context_locked(uint64_t now) const;
  std::string envelope_path(const std::string& digest) const;

  AnchorRegistryConfig config_;
  mutable std::mutex mu_;
  TrustRoot root_;
  uint64_t revocation_version_ = 0;
  uint64_t revocation_expires_ = 0;  // 0: no statement accepted yet
  std::set<std::string> revoked_digests_, revoked_lineages_, revoked_keyids_;
  struct LineageMark {
    uint64_t version = 0;
    std::string digest;
  };
  std::map<std::string, LineageMark> lineages_;
  std::map<std::string, AnchorRecord> anchors_;
};

}  // namespace pagoda
