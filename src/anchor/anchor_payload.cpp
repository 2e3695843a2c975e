#include "anchor/anchor_payload.h"

#include <cstring>
#include <span>

#include "anchor/anchor_error.h"
#include "anchor/cbor.h"

namespace pagoda {

namespace {

Error bad_field(const std::string& message) {
  return make_coded_error(anchor_codes::kBadField, "anchor payload: " + message);
}

Result<std::string> text_field(const CborValue& map, const char* key, size_t min_len, size_t max_len) {
  const CborValue* v = map.find(key);
  if (!v || v->type != CborValue::Type::kText) return bad_field(std::string("'") + key + "' must be a text string");
  if (v->bytes.size() < min_len || v->bytes.size() > max_len) {
    if (std::strcmp(key, "text") == 0 && v->bytes.size() > max_len)
      return make_coded_error(anchor_codes::kTooLarge, "anchor text has " + std::to_string(v->bytes.size()) +
                                                           " bytes; at most " + std::to_string(max_len));
    return bad_field(std::string("'") + key + "' must have " + std::to_string(min_len) + " to " +
                     std::to_string(max_len) + " bytes");
  }
  return v->bytes;
}

Result<uint64_t> unsigned_field(const CborValue& map, const char* key) {
  const CborValue* v = map.find(key);
  if (!v || v->type != CborValue::Type::kUnsigned) return bad_field(std::string("'") + key + "' must be unsigned");
  return v->uint;
}

constexpr const char* kKeys[] = {"v", "lineage", "version", "kind", "scope", "model", "text", "issued", "expires"};

}  // namespace

Result<AnchorPayload> decode_anchor_payload(std::string_view bytes) {
  const std::span<const uint8_t> raw(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  auto decoded = decode_cbor(raw, CborLimits{.max_depth = 2, .max_items = 64});
  if (!decoded.ok())
    return make_coded_error(anchor_codes::kNonCanonicalPayload, "anchor payload: " + decoded.error().message);
  if (!is_deterministic_cbor(raw, *decoded))
    return make_coded_error(anchor_codes::kNonCanonicalPayload,
                            "anchor payload is not in core deterministic CBOR encoding (RFC 8949 4.2.1)");
  const CborValue& m = *decoded;
  if (m.type != CborValue::Type::kMap) return bad_field("must be a CBOR map");
  for (const auto& [k, v] : m.entries) {
    if (k.type != CborValue::Type::kText) return bad_field("keys must be text strings");
    bool known = false;
    for (const char* want : kKeys) known |= k.bytes == want;
    if (!known) return bad_field("unknown key '" + k.bytes + "'");
  }
  for (const char* want : kKeys)
    if (!m.find(want)) return bad_field(std::string("missing key '") + want + "'");
  AnchorPayload p;
  auto v = unsigned_field(m, "v");
  if (!v.ok()) return v.error();
  if (*v != 1) return bad_field("'v' must be 1");
  auto lineage = text_field(m, "lineage", 1, 128);
  auto version = unsigned_field(m, "version");
  auto kind = text_field(m, "kind", 1, 32);
  auto scope = text_field(m, "scope", 1, 128);
  auto text = text_field(m, "text", 1, kMaxAnchorTextBytes);
  auto issued = unsigned_field(m, "issued");
  auto expires = unsigned_field(m, "expires");
  for (const Error* e : {lineage.ok() ? nullptr : &lineage.error(), version.ok() ? nullptr : &version.error(),
                         kind.ok() ? nullptr : &kind.error(), scope.ok() ? nullptr : &scope.error(),
                         text.ok() ? nullptr : &text.error(), issued.ok() ? nullptr : &issued.error(),
                         expires.ok() ? nullptr : &expires.error()})
    if (e) return *e;
  if (*version < 1) return bad_field("'version' must be at least 1");
  if (*issued >= *expires) return bad_field("'issued' must be before 'expires'");
  const CborValue* model = m.find("model");
  if (model->type != CborValue::Type::kBytes || model->bytes.size() != 32)
    return bad_field("'model' must be a 32-byte string (SHA-256 of the model file)");
  p.lineage = std::move(*lineage);
  p.version = *version;
  p.kind = std::move(*kind);
  p.scope = std::move(*scope);
  std::memcpy(p.model.data(), model->bytes.data(), 32);
  p.text = std::move(*text);
  p.issued = *issued;
  p.expires = *expires;
  return p;
}

std::string encode_anchor_payload(const AnchorPayload& p) {
  auto entry = [](const char* key, CborValue value) { return std::make_pair(CborValue::text(key), std::move(value)); };
  return encode_cbor(CborValue::map({
      entry("v", CborValue::unsigned_int(1)),
      entry("lineage", CborValue::text(p.lineage)),
      entry("version", CborValue::unsigned_int(p.version)),
      entry("kind", CborValue::text(p.kind)),
      entry("scope", CborValue::text(p.scope)),
      entry("model", CborValue::byte_string(std::string(reinterpret_cast<const char*>(p.model.data()), 32))),
      entry("text", CborValue::text(p.text)),
      entry("issued", CborValue::unsigned_int(p.issued)),
      entry("expires", CborValue::unsigned_int(p.expires)),
  }));
}

std::string anchor_digest(std::string_view payload_bytes) { return to_hex(sha256(payload_bytes)); }

}  // namespace pagoda
