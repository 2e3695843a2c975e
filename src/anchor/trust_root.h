// The trust root an operator pins (--anchor-trust-root): which Ed25519 keys may sign what, and how many must.
//   {"version": 1, "expires": <unix s>, "keys": {"<keyid>": "<64 hex public key>"},
//    "roles": {"root": {"keyids": [...], "threshold": 1}, "anchor": {...}, "revocation": {...}}}
// Strict: no duplicate or unknown keys, all three roles, keyid = SHA-256 of its key, keys valid prime-order points,
// 1 <= threshold <= the role's key count, each role key listed once and present in "keys", not expired.
// A subset of TUF's root metadata; see docs/anchors.md.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "anchor/dsse_envelope.h"
#include "anchor/ed25519.h"
#include "util/result.h"

namespace pagoda {

enum class TrustRoleName { kRoot, kAnchor, kRevocation };
const char* trust_role_name(TrustRoleName role);

struct TrustRole {
  std::vector<std::string> keyids;
  int32_t threshold = 1;
};

struct TrustRoot {
  uint64_t version = 0;
  uint64_t expires = 0;                            // Unix seconds
  std::map<std::string, Ed25519PublicKey> keys;    // keyid -> public key
  TrustRole root, anchor, revocation;
  std::string json_text;                           // the bytes it was read from (persisted as they are)

  const TrustRole& role(TrustRoleName r) const;
  TrustRole& mutable_role(TrustRoleName r);
};

// `now` in Unix seconds: a root that has expired is refused.
Result<TrustRoot> parse_trust_root(std::string_view json_text, uint64_t now);

// Counts the distinct keys of `role` whose signature over the envelope's PAE verifies, skipping `revoked_keyids`.
// Each signature is tried against every key of the role (the keyid is a hint, never trusted), so a key counts once
// however many signatures or keyids carry it, and keys of other roles count for nothing. On failure the error
// code says why: threshold_not_met (some role keys signed, too few), wrong_role (only keys of other roles signed),
// revoked (a revoked key's signature was needed), bad_signature (a keyid names a trusted key that did not sign),
// unknown_key (no trusted key signed at all).
// On success, *signers (when given) receives the keyids of the role's keys that signed.
Status verify_threshold(const DsseEnvelope& envelope, const TrustRoot& root, TrustRoleName role,
                        const std::set<std::string>& revoked_keyids = {}, std::set<std::string>* signers = nullptr);

// Root rotation: a DSSE envelope (payloadType application/vnd.pagoda.root.v1+json) whose payload is the new root's
// JSON, with version = current + 1, signed by the threshold of the current root's `root` role and by the threshold
// of the new root's `root` role (so a stolen old key alone cannot rotate, and the new keys prove possession).
inline constexpr std::string_view kRootPayloadType = "application/vnd.pagoda.root.v1+json";
// Keys in `revoked_keyids` count for neither threshold.
Result<TrustRoot> verify_root_rotation(std::string_view envelope_json, const TrustRoot& current, uint64_t now,
                                       const std::set<std::string>& revoked_keyids = {});

}  // namespace pagoda
