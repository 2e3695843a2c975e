// The signed content of an anchor: one CBOR map in core deterministic encoding (RFC 8949 4.2.1) with exactly
//   "v": 1, "lineage": text 1-128 bytes, "version": unsigned >= 1, "kind": text 1-32 bytes, "scope": text 1-128
//   bytes (a tenant, or "*" for every tenant), "model": 32-byte string (SHA-256 of the model file),
//   "text": UTF-8 1-16384 bytes, "issued" < "expires": unsigned Unix seconds.
// The anchor's identity, its digest, is the lowercase hex SHA-256 of these payload bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "anchor/ed25519.h"
#include "util/result.h"

namespace pagoda {

inline constexpr std::string_view kAnchorPayloadType = "application/vnd.pagoda.anchor.v1+cbor";
inline constexpr size_t kMaxAnchorTextBytes = 16384;

struct AnchorPayload {
  std::string lineage;
  uint64_t version = 1;
  std::string kind;
  std::string scope;
  Sha256Digest model{};
  std::string text;
  uint64_t issued = 0;
  uint64_t expires = 0;
};

// Decodes payload bytes whose signatures were already verified. Errors: code non_canonical_payload (not CBOR of
// the allowed subset, or not its one deterministic encoding), bad_field (a key missing, unknown or invalid),
// too_large (text over kMaxAnchorTextBytes).
Result<AnchorPayload> decode_anchor_payload(std::string_view bytes);

// The deterministic encoding of a payload (the CLI's sign, and tests). The payload must be valid.
std::string encode_anchor_payload(const AnchorPayload& payload);

// lowercase hex SHA-256 of the payload bytes
std::string anchor_digest(std::string_view payload_bytes);

}  // namespace pagoda
