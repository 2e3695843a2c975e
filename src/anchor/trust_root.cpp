#include "anchor/trust_root.h"

#include <limits>
#include <utility>
#include <nlohmann/json.hpp>

#include "anchor/anchor_error.h"
#include "anchor/strict_json.h"

namespace pagoda {

using json = nlohmann::json;

const char* trust_role_name(TrustRoleName role) {
  switch (role) {
    case TrustRoleName::kRoot:
      return "root";
    case TrustRoleName::kAnchor:
      return "anchor";
    case TrustRoleName::kRevocation:
      break;
  }
  return "revocation";
}

TrustRole& TrustRoot::mutable_role(TrustRoleName r) { return const_cast<TrustRole&>(std::as_const(*this).role(r)); }

const TrustRole& TrustRoot::role(TrustRoleName r) const {
  switch (r) {
    case TrustRoleName::kRoot:
      return root;
    case TrustRoleName::kAnchor:
      return anchor;
    case TrustRoleName::kRevocation:
      break;
  }
  return revocation;
}

namespace {

Error root_error(const std::string& message) { return make_error("trust root: " + message); }

bool is_unsigned(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

Result<TrustRole> read_role(const json& roles, const char* name, const TrustRoot& root) {
  const std::string where = std::string("role '") + name + "'";
  if (Status st = expect_exact_keys(roles[name], {"keyids", "threshold"}, where); !st.ok())
    return root_error(st.error().message);
  const json& r = roles[name];
  TrustRole out;
  if (!r["keyids"].is_array() || r["keyids"].empty()) return root_error(where + ": 'keyids' must be a non-empty list");
  std::set<std::string> seen;
  for (const json& k : r["keyids"]) {
    if (!k.is_string()) return root_error(where + ": keyids must be strings");
    const std::string id = k.get<std::string>();
    if (!root.keys.count(id)) return root_error(where + " names keyid " + id + ", which is not in 'keys'");
    if (!seen.insert(id).second) return root_error(where + " lists keyid " + id + " twice");
    out.keyids.push_back(id);
  }
  if (!r["threshold"].is_number_integer()) return root_error(where + ": 'threshold' must be an integer");
  const int64_t t = r["threshold"].get<int64_t>();
  if (t < 1 || t > static_cast<int64_t>(out.keyids.size()))
    return root_error(where + ": threshold " + std::to_string(t) + " must be between 1 and its " +
                      std::to_string(out.keyids.size()) + " keys");
  out.threshold = static_cast<int32_t>(t);
  return out;
}

}  // namespace

Result<TrustRoot> parse_trust_root(std::string_view json_text, uint64_t now) {
  if (json_text.size() > kMaxEnvelopeBytes) return root_error("larger than " + std::to_string(kMaxEnvelopeBytes) + " bytes");
  auto parsed = parse_strict_json(json_text, /*max_depth=*/5);
  if (!parsed.ok()) return root_error(parsed.error().message);
  const json& j = *parsed;
  if (Status st = expect_exact_keys(j, {"version", "expires", "keys", "roles"}, "the root"); !st.ok())
    return root_error(st.error().message);
  TrustRoot root;
  root.json_text = std::string(json_text);
  if (!is_unsigned(j["version"]) || j["version"].get<uint64_t>() < 1)
    return root_error("'version' must be an integer >= 1");
  root.version = j["version"].get<uint64_t>();
  if (!is_unsigned(j["expires"])) return root_error("'expires' must be Unix seconds");
  root.expires = j["expires"].get<uint64_t>();
  if (root.expires <= now) return root_error("expired at " + std::to_string(root.expires) + " (now " + std::to_string(now) + ")");
  if (!j["keys"].is_object() || j["keys"].empty()) return root_error("'keys' must be a non-empty object");
  for (const auto& [keyid, hex] : j["keys"].items()) {
    if (!hex.is_string()) return root_error("key " + keyid + " must be 64 hex digits");
    auto key = from_hex<32>(hex.get<std::string>());
    if (!key.ok()) return root_error("key " + keyid + ": " + key.error().message);
    if (!ed25519_public_key_is_valid(*key))
      return root_error("key " + keyid + " is not a valid Ed25519 public key (small order, or not canonical)");
    if (ed25519_key_id(*key) != keyid)
      return root_error("keyid " + keyid + " is not the SHA-256 of its key (" + ed25519_key_id(*key) + ")");
    root.keys[keyid] = *key;
  }
  if (Status st = expect_exact_keys(j["roles"], {"root", "anchor", "revocation"}, "'roles'"); !st.ok())
    return root_error(st.error().message);
  for (TrustRoleName r : {TrustRoleName::kRoot, TrustRoleName::kAnchor, TrustRoleName::kRevocation}) {
    auto role = read_role(j["roles"], trust_role_name(r), root);
    if (!role.ok()) return role.error();
    root.mutable_role(r) = std::move(*role);
  }
  return root;
}

Status verify_threshold(const DsseEnvelope& envelope, const TrustRoot& root, TrustRoleName role,
                        const std::set<std::string>& revoked_keyids, std::set<std::string>* signers) {
  const std::string pae = dsse_pae(envelope.payload_type, envelope.payload);
  const TrustRole& wanted = root.role(role);
  std::set<std::string> role_signers, other_signers;
  bool named_trusted_key_failed = false, revoked_key_signed = false;
  for (const DsseSignature& s : envelope.signatures) {
    bool verified_any = false;
    for (const auto& [keyid, key] : root.keys) {
      if (!ed25519_verify(s.sig, pae, key)) continue;
      if (revoked_keyids.count(keyid)) {
        revoked_key_signed = verified_any = true;
        continue;
      }
      verified_any = true;
      bool in_role = false;
      for (const std::string& id : wanted.keyids) in_role |= id == keyid;
      (in_role ? role_signers : other_signers).insert(keyid);
    }
    if (!verified_any && root.keys.count(s.keyid)) named_trusted_key_failed = true;
  }
  const int32_t have = static_cast<int32_t>(role_signers.size());
  if (have >= wanted.threshold) {
    if (signers) *signers = std::move(role_signers);
    return Status::success();
  }
  const std::string need = "the '" + std::string(trust_role_name(role)) + "' role needs " +
                           std::to_string(wanted.threshold) + " distinct signing keys";
  if (revoked_key_signed)
    return make_coded_error(anchor_codes::kRevoked, need + "; " + std::to_string(have) +
                                                        " signed besides keys that were revoked");
  if (have > 0)
    return make_coded_error(anchor_codes::kThresholdNotMet, need + "; " + std::to_string(have) + " signed");
  if (!other_signers.empty())
    return make_coded_error(anchor_codes::kWrongRole, need + "; only keys of other roles signed");
  if (named_trusted_key_failed)
    return make_coded_error(anchor_codes::kBadSignature, "a signature does not verify under the trusted key its "
                                                         "keyid names, nor under any other trusted key");
  return make_coded_error(anchor_codes::kUnknownKey, "no signature verifies under any key of the trust root");
}

Result<TrustRoot> verify_root_rotation(std::string_view envelope_json, const TrustRoot& current, uint64_t now,
                                       const std::set<std::string>& revoked_keyids) {
  auto envelope = parse_dsse_envelope(envelope_json);
  if (!envelope.ok()) return envelope.error();
  if (envelope->payload_type != kRootPayloadType)
    return make_coded_error(anchor_codes::kWrongPayloadType, "payloadType '" + envelope->payload_type + "' is not '" +
                                                                 std::string(kRootPayloadType) + "'");
  if (Status st = verify_threshold(*envelope, current, TrustRoleName::kRoot, revoked_keyids); !st.ok())
    return make_coded_error(st.error().code, "the current root: " + st.error().message);
  auto next = parse_trust_root(envelope->payload, now);
  if (!next.ok()) return make_coded_error(anchor_codes::kBadField, next.error().message);
  if (next->version != current.version + 1)
    return make_coded_error(anchor_codes::kRollback, "the new root has version " + std::to_string(next->version) +
                                                         "; the next version is " + std::to_string(current.version + 1));
  if (Status st = verify_threshold(*envelope, *next, TrustRoleName::kRoot, revoked_keyids); !st.ok())
    return make_coded_error(st.error().code, "the new root: " + st.error().message);
  return next;
}

}  // namespace pagoda
