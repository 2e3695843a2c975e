// Verification of one anchor envelope, in the order that keeps untrusted bytes away from everything but the
// parsers that must read them: envelope shape -> payloadType -> signatures over the raw payload bytes (the
// anchor role's threshold of distinct, unrevoked keys) -> only then decode the payload, exactly once, and require
// its deterministic encoding -> fields -> model digest -> validity window. Registry checks (revoked digests and
// lineages, rollback, lineage conflicts, the token cap) come after, in the anchor registry. Every failure is an
// Error whose code is one of anchor_error.h.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "anchor/anchor_payload.h"
#include "anchor/trust_root.h"
#include "util/result.h"

namespace pagoda {

struct AnchorVerifyContext {
  const TrustRoot* root = nullptr;
  Sha256Digest model_digest{};            // SHA-256 of the served model file
  uint64_t now = 0;                       // Unix seconds (injected: tests drive the clock)
  std::set<std::string> revoked_keyids;   // keys revoked by accepted revocation statements
};

struct VerifiedAnchor {
  std::string digest;                // lowercase hex SHA-256 of the payload bytes
  AnchorPayload payload;
  std::string envelope_json;         // exactly as received, for the state directory
  std::set<std::string> signer_keyids;
};

Result<VerifiedAnchor> verify_anchor_envelope(std::string_view envelope_json, const AnchorVerifyContext& ctx);

}  // namespace pagoda
