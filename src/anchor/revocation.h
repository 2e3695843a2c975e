// Revocation statements: DSSE envelopes with payloadType application/vnd.pagoda.revocation.v1+cbor whose payload
// is a deterministic CBOR map with exactly
//   "v": 1, "version": unsigned, "issued": unsigned, "expires": unsigned (Unix s, issued < expires),
//   "digests": [32-byte strings], "lineages": [text 1-128 bytes], "keyids": [text, 64 lowercase hex]
// signed by the threshold of the root's `revocation` role. What a statement revokes is permanent (tombstones);
// versions only increase (checked by the registry, which knows the highest version seen).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "anchor/trust_root.h"
#include "util/result.h"

namespace pagoda {

inline constexpr std::string_view kRevocationPayloadType = "application/vnd.pagoda.revocation.v1+cbor";
inline constexpr size_t kMaxRevocationEntries = 4096;  // per list

struct RevocationStatement {
  uint64_t version = 0;
  uint64_t issued = 0;
  uint64_t expires = 0;
  std::set<std::string> digests;   // lowercase hex
  std::set<std::string> lineages;
  std::set<std::string> keyids;
};

// Envelope shape, payloadType, the revocation role's threshold (keys revoked before do not count), then the payload.
// Time: a statement not yet issued is refused (not_yet_valid); an expired one too (expired): it could only be a
// replay of an old freeze-protection window.
Result<RevocationStatement> verify_revocation_envelope(std::string_view envelope_json, const TrustRoot& root,
                                                       uint64_t now, const std::set<std::string>& revoked_keyids);

Result<RevocationStatement> decode_revocation_payload(std::string_view bytes);
std::string encode_revocation_payload(const RevocationStatement& statement);

}  // namespace pagoda
