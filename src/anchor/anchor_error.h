// The reasons an anchor artifact (or a revocation statement, or a root rotation) is refused. Each is reported as
// Error::code with its name below, and over HTTP as the OpenAI error's "code"; tests and operators branch on it.
#pragma once

namespace pagoda::anchor_codes {

inline constexpr const char* kMalformedEnvelope = "malformed_envelope";  // not a DSSE envelope of the exact shape
inline constexpr const char* kWrongPayloadType = "wrong_payload_type";   // payloadType is not the expected one
inline constexpr const char* kBadSignature = "bad_signature";            // a named trusted key did not sign it
inline constexpr const char* kUnknownKey = "unknown_key";                // no signature by any trusted key
inline constexpr const char* kWrongRole = "wrong_role";                  // signed only by keys of other roles
inline constexpr const char* kThresholdNotMet = "threshold_not_met";     // fewer distinct role keys than needed
inline constexpr const char* kNonCanonicalPayload = "non_canonical_payload";  // not deterministic CBOR
inline constexpr const char* kBadField = "bad_field";                    // a missing, unknown or invalid field
inline constexpr const char* kWrongModel = "wrong_model";                // made for other weights or tokenizer
inline constexpr const char* kTooLarge = "too_large";                    // over the byte or token cap
inline constexpr const char* kExpired = "expired";
inline constexpr const char* kNotYetValid = "not_yet_valid";
inline constexpr const char* kRollback = "rollback";                  // older than a version already seen
inline constexpr const char* kLineageConflict = "lineage_conflict";   // same lineage version, other digest
inline constexpr const char* kRevoked = "revoked";
inline constexpr const char* kStateWriteFailed = "state_write_failed";  // the state folder refused a write (full disk)

}  // namespace pagoda::anchor_codes
