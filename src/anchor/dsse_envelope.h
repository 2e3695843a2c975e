// DSSE v1 envelopes (the signed wrapper of anchors, revocation statements and root rotations), strictly parsed:
//   {"payloadType": "<type>", "payload": "<base64>", "signatures": [{"keyid": "<hex>", "sig": "<base64>"}, ...]}
// exactly these keys, no duplicates, standard base64 with padding, 1 to kMaxSignatures signatures of 64 bytes.
// Each signature is Ed25519 over PAE(payloadType, payload) (see dsse_pae). Parsing checks shape only: who signed
// is for the verifier.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "anchor/ed25519.h"
#include "util/result.h"

namespace pagoda {

struct DsseSignature {
  std::string keyid;  // as sent: a hint for finding the key, never a reason to trust one
  Ed25519Signature sig;
};

struct DsseEnvelope {
  std::string payload_type;
  std::string payload;  // decoded bytes
  std::vector<DsseSignature> signatures;
};

inline constexpr size_t kMaxSignatures = 8;
inline constexpr size_t kMaxEnvelopeBytes = size_t{64} << 10;  // an anchor's text is at most 16 KiB

// Errors carry code "malformed_envelope" (or "too_large" over kMaxEnvelopeBytes, "bad_signature" for a signature
// that is not 64 bytes).
Result<DsseEnvelope> parse_dsse_envelope(std::string_view json_text);

// "DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload, LEN in ASCII decimal without leading zeros.
std::string dsse_pae(std::string_view payload_type, std::string_view payload);

// Writes an envelope (the CLI's sign, and tests).
std::string write_dsse_envelope(const DsseEnvelope& envelope);

}  // namespace pagoda
