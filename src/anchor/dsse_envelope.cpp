#include "anchor/dsse_envelope.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "anchor/anchor_error.h"
#include "anchor/base64.h"
#include "anchor/strict_json.h"

namespace pagoda {

using json = nlohmann::json;

namespace {
Error malformed(const std::string& message) {
  return make_coded_error(anchor_codes::kMalformedEnvelope, "malformed DSSE envelope: " + message);
}
}  // namespace

Result<DsseEnvelope> parse_dsse_envelope(std::string_view json_text) {
  if (json_text.size() > kMaxEnvelopeBytes)
    return make_coded_error(anchor_codes::kTooLarge, "the envelope has " + std::to_string(json_text.size()) +
                                                         " bytes; at most " + std::to_string(kMaxEnvelopeBytes));
  auto parsed = parse_strict_json(json_text, /*max_depth=*/4);
  if (!parsed.ok()) return malformed(parsed.error().message);
  const json& j = *parsed;
  if (Status st = expect_exact_keys(j, {"payloadType", "payload", "signatures"}, "the envelope"); !st.ok())
    return malformed(st.error().message);
  if (!j["payloadType"].is_string()) return malformed("'payloadType' must be a string");
  if (!j["payload"].is_string()) return malformed("'payload' must be a string");
  const json& sigs = j["signatures"];
  if (!sigs.is_array() || sigs.empty() || sigs.size() > kMaxSignatures)
    return malformed("'signatures' must be a list of 1 to " + std::to_string(kMaxSignatures) + " signatures");
  DsseEnvelope out;
  out.payload_type = j["payloadType"].get<std::string>();
  auto payload = decode_base64(j["payload"].get<std::string>());
  if (!payload.ok()) return malformed("'payload' is not standard base64: " + payload.error().message);
  out.payload = std::move(*payload);
  for (size_t i = 0; i < sigs.size(); ++i) {
    const std::string where = "signatures[" + std::to_string(i) + "]";
    if (Status st = expect_exact_keys(sigs[i], {"keyid", "sig"}, where); !st.ok()) return malformed(st.error().message);
    if (!sigs[i]["keyid"].is_string() || !sigs[i]["sig"].is_string())
      return malformed(where + ": 'keyid' and 'sig' must be strings");
    auto sig = decode_base64(sigs[i]["sig"].get<std::string>());
    if (!sig.ok()) return malformed(where + ".sig is not standard base64: " + sig.error().message);
    if (sig->size() != 64)
      return make_coded_error(anchor_codes::kBadSignature, where + ".sig has " + std::to_string(sig->size()) +
                                                               " bytes; an Ed25519 signature has 64");
    DsseSignature s;
    s.keyid = sigs[i]["keyid"].get<std::string>();
    std::memcpy(s.sig.data(), sig->data(), 64);
    out.signatures.push_back(std::move(s));
  }
  return out;
}

std::string dsse_pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

std::string write_dsse_envelope(const DsseEnvelope& envelope) {
  nlohmann::ordered_json j;
  j["payloadType"] = envelope.payload_type;
  j["payload"] = encode_base64(envelope.payload);
  j["signatures"] = nlohmann::ordered_json::array();
  for (const DsseSignature& s : envelope.signatures)
    j["signatures"].push_back(
        {{"keyid", s.keyid},
         {"sig", encode_base64(std::string_view(reinterpret_cast<const char*>(s.sig.data()), s.sig.size()))}});
  return j.dump();
}

}  // namespace pagoda
