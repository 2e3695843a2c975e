#include "anchor/revocation.h"

#include <span>

#include "anchor/anchor_error.h"
#include "anchor/cbor.h"
#include "anchor/dsse_envelope.h"

namespace pagoda {

namespace {

Error bad_revocation_field(const std::string& message) {
  return make_coded_error(anchor_codes::kBadField, "revocation statement: " + message);
}

bool is_lower_hex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

constexpr const char* kRevocationKeys[] = {"v", "version", "issued", "expires", "digests", "lineages", "keyids"};

}  // namespace

Result<RevocationStatement> decode_revocation_payload(std::string_view bytes) {
  const std::span<const uint8_t> raw(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  auto decoded = decode_cbor(raw, CborLimits{.max_depth = 3, .max_items = 3 * kMaxRevocationEntries + 64});
  if (!decoded.ok())
    return make_coded_error(anchor_codes::kNonCanonicalPayload, "revocation statement: " + decoded.error().message);
  if (!is_deterministic_cbor(raw, *decoded))
    return make_coded_error(anchor_codes::kNonCanonicalPayload,
                            "revocation statement is not in core deterministic CBOR encoding");
  const CborValue& m = *decoded;
  if (m.type != CborValue::Type::kMap) return bad_revocation_field("must be a CBOR map");
  for (const auto& [k, v] : m.entries) {
    bool known = false;
    for (const char* want : kRevocationKeys) known |= k.type == CborValue::Type::kText && k.bytes == want;
    if (!known) return bad_revocation_field("unknown key");
  }
  for (const char* want : kRevocationKeys)
    if (!m.find(want)) return bad_revocation_field(std::string("missing key '") + want + "'");
  RevocationStatement out;
  for (const char* key : {"v", "version", "issued", "expires"})
    if (m.find(key)->type != CborValue::Type::kUnsigned)
      return bad_revocation_field(std::string("'") + key + "' must be unsigned");
  if (m.find("v")->uint != 1) return bad_revocation_field("'v' must be 1");
  out.version = m.find("version")->uint;
  out.issued = m.find("issued")->uint;
  out.expires = m.find("expires")->uint;
  if (out.issued >= out.expires) return bad_revocation_field("'issued' must be before 'expires'");
  for (const char* key : {"digests", "lineages", "keyids"}) {
    const CborValue* list = m.find(key);
    if (list->type != CborValue::Type::kArray || list->items.size() > kMaxRevocationEntries)
      return bad_revocation_field(std::string("'") + key + "' must be a list of at most " +
                                  std::to_string(kMaxRevocationEntries) + " entries");
    for (const CborValue& item : list->items) {
      if (std::string_view(key) == "digests") {
        if (item.type != CborValue::Type::kBytes || item.bytes.size() != 32)
          return bad_revocation_field("'digests' entries must be 32-byte strings");
        out.digests.insert(to_hex(reinterpret_cast<const uint8_t*>(item.bytes.data()), 32));
      } else if (std::string_view(key) == "lineages") {
        if (item.type != CborValue::Type::kText || item.bytes.empty() || item.bytes.size() > 128)
          return bad_revocation_field("'lineages' entries must be text of 1 to 128 bytes");
        out.lineages.insert(item.bytes);
      } else {
        if (item.type != CborValue::Type::kText || !is_lower_hex(item.bytes, 64))
          return bad_revocation_field("'keyids' entries must be 64 lowercase hex digits");
        out.keyids.insert(item.bytes);
      }
    }
  }
  return out;
}

std::string encode_revocation_payload(const RevocationStatement& s) {
  std::vector<CborValue> digests, lineages, keyids;
  for (const std::string& d : s.digests) {
    auto bytes = from_hex<32>(d);
    if (bytes.ok()) digests.push_back(CborValue::byte_string(std::string(reinterpret_cast<const char*>(bytes->data()), 32)));
  }
  for (const std::string& l : s.lineages) lineages.push_back(CborValue::text(l));
  for (const std::string& k : s.keyids) keyids.push_back(CborValue::text(k));
  auto entry = [](const char* key, CborValue value) { return std::make_pair(CborValue::text(key), std::move(value)); };
  return encode_cbor(CborValue::map({entry("v", CborValue::unsigned_int(1)),
                                     entry("version", CborValue::unsigned_int(s.version)),
                                     entry("issued", CborValue::unsigned_int(s.issued)),
                                     entry("expires", CborValue::unsigned_int(s.expires)),
                                     entry("digests", CborValue::array(std::move(digests))),
                                     entry("lineages", CborValue::array(std::move(lineages))),
                                     entry("keyids", CborValue::array(std::move(keyids)))}));
}

Result<RevocationStatement> verify_revocation_envelope(std::string_view envelope_json, const TrustRoot& root,
                                                       uint64_t now, const std::set<std::string>& revoked_keyids) {
  auto envelope = parse_dsse_envelope(envelope_json);
  if (!envelope.ok()) return envelope.error();
  if (envelope->payload_type != kRevocationPayloadType)
    return make_coded_error(anchor_codes::kWrongPayloadType, "payloadType '" + envelope->payload_type +
                                                                 "' is not '" + std::string(kRevocationPayloadType) + "'");
  if (Status st = verify_threshold(*envelope, root, TrustRoleName::kRevocation, revoked_keyids); !st.ok())
    return st.error();
  auto statement = decode_revocation_payload(envelope->payload);
  if (!statement.ok()) return statement.error();
  if (now < statement->issued)
    return make_coded_error(anchor_codes::kNotYetValid, "the revocation statement is valid from " +
                                                            std::to_string(statement->issued));
  if (now >= statement->expires)
    return make_coded_error(anchor_codes::kExpired, "the revocation statement expired at " +
                                                        std::to_string(statement->expires));
  return statement;
}

}  // namespace pagoda
