// A simulated signing authority for anchor tests: keys from fixed seeds (root, two anchor keys, a revocation key),
// a trust root naming them, and helpers to mint anchor envelopes and revocation statements.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "anchor/anchor_payload.h"
#include "anchor/dsse_envelope.h"
#include "anchor/ed25519.h"
#include "anchor/revocation.h"

namespace pagoda {

inline constexpr uint64_t kNow = 1'800'000'000;

inline Ed25519KeyPair key_from(uint8_t seed_byte) {
  std::array<uint8_t, 32> seed{};
  seed.fill(seed_byte);
  return ed25519_from_seed(seed);
}

class Authority {
 public:
  Authority() : root_key(key_from(1)), anchor_a(key_from(2)), anchor_b(key_from(3)), revoker(key_from(4)) {}

  // A root whose anchor role has anchor_a and anchor_b with the given threshold.
  std::string root_json(int anchor_threshold = 1, uint64_t expires = kNow + 86400, uint64_t version = 1) const {
    nlohmann::json keys = nlohmann::json::object();
    for (const auto* k : {&root_key, &anchor_a, &anchor_b, &revoker})
      keys[ed25519_key_id(k->public_key)] = to_hex(k->public_key);
    auto role = [](std::vector<const Ed25519KeyPair*> ks, int t) {
      nlohmann::json ids = nlohmann::json::array();
      for (const auto* k : ks) ids.push_back(ed25519_key_id(k->public_key));
      return nlohmann::json{{"keyids", ids}, {"threshold", t}};
    };
    return nlohmann::json{{"version", version},
                {"expires", expires},
                {"keys", keys},
                {"roles",
                 {{"root", role({&root_key}, 1)},
                  {"anchor", role({&anchor_a, &anchor_b}, anchor_threshold)},
                  {"revocation", role({&revoker}, 1)}}}}
        .dump();
  }

  AnchorPayload payload() const {
    AnchorPayload p;
    p.lineage = "user-42/memory";
    p.version = 3;
    p.kind = "memory";
    p.scope = "*";
    p.model = model;
    p.text = "The user prefers metric units.";
    p.issued = kNow - 60;
    p.expires = kNow + 3600;
    return p;
  }

  static DsseSignature sign(const std::string& type, const std::string& payload, const Ed25519KeyPair& k) {
    return DsseSignature{ed25519_key_id(k.public_key), ed25519_sign(dsse_pae(type, payload), k.secret_key)};
  }

  std::string envelope(const std::string& payload_bytes, std::vector<const Ed25519KeyPair*> signers,
                       const std::string& type = std::string(kAnchorPayloadType)) const {
    DsseEnvelope e{type, payload_bytes, {}};
    for (const auto* k : signers) e.signatures.push_back(sign(type, payload_bytes, *k));
    return write_dsse_envelope(e);
  }
  std::string envelope() const { return envelope(encode_anchor_payload(payload()), {&anchor_a}); }
  std::string envelope(const AnchorPayload& p, const Ed25519KeyPair& signer) const {
    return envelope(encode_anchor_payload(p), {&signer});
  }
  std::string revocation(const RevocationStatement& s, const Ed25519KeyPair* signer = nullptr) const {
    return envelope(encode_revocation_payload(s), {signer ? signer : &revoker}, std::string(kRevocationPayloadType));
  }

  Ed25519KeyPair root_key, anchor_a, anchor_b, revoker;
  Sha256Digest model = sha256("model file bytes");
};


}  // namespace pagoda
