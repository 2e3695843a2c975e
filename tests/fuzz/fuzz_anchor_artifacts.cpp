// libFuzzer target: untrusted anchor artifacts through every parser and verifier that reads them before anything
// is trusted: the DSSE envelope (strict JSON, base64), the anchor payload and revocation statement decoders, the
// trust root parser, and the full verifiers (anchor, revocation, root rotation) against a fixed trust root. The
// input is also tried as raw payload bytes and wrapped into an envelope signed by the root's anchor key, so the
// payload decoders are reached behind a valid signature too. Nothing may crash, leak or trip the sanitizers.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "anchor/anchor_payload.h"
#include "anchor/anchor_verifier.h"
#include "anchor/dsse_envelope.h"
#include "anchor/revocation.h"
#include "anchor/trust_root.h"

namespace {

struct Fixture {
  pagoda::Ed25519KeyPair key;
  pagoda::TrustRoot root;
};

const Fixture& fixture() {
  static const Fixture* f = [] {
    auto* out = new Fixture;
    std::array<uint8_t, 32> seed{};
    seed.fill(7);
    out->key = pagoda::ed25519_from_seed(seed);
    const std::string id = pagoda::ed25519_key_id(out->key.public_key);
    const nlohmann::json role = {{"keyids", {id}}, {"threshold", 1}};
    const nlohmann::json root = {{"version", 1},
                                 {"expires", 4000000000u},
                                 {"keys", {{id, pagoda::to_hex(out->key.public_key)}}},
                                 {"roles", {{"root", role}, {"anchor", role}, {"revocation", role}}}};
    auto parsed = pagoda::parse_trust_root(root.dump(), 0);
    if (!parsed.ok()) __builtin_trap();
    out->root = *parsed;
    return out;
  }();
  return *f;
}

std::string signed_envelope(std::string_view type, std::string_view payload) {
  pagoda::DsseEnvelope e{std::string(type), std::string(payload), {}};
  e.signatures.push_back({pagoda::ed25519_key_id(fixture().key.public_key),
                          pagoda::ed25519_sign(pagoda::dsse_pae(type, payload), fixture().key.secret_key)});
  return pagoda::write_dsse_envelope(e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Fixture& f = fixture();
  pagoda::AnchorVerifyContext ctx;
  ctx.root = &f.root;
  ctx.now = 1800000000;
  // As an envelope, a root, and raw payloads.
  (void)pagoda::parse_dsse_envelope(text);
  (void)pagoda::parse_trust_root(text, 0);
  (void)pagoda::verify_anchor_envelope(text, ctx);
  (void)pagoda::verify_revocation_envelope(text, f.root, ctx.now, {});
  (void)pagoda::verify_root_rotation(text, f.root, ctx.now);
  auto payload = pagoda::decode_anchor_payload(text);
  if (payload.ok() && pagoda::encode_anchor_payload(*payload) != text) __builtin_trap();  // canonical: a fixed point
  auto statement = pagoda::decode_revocation_payload(text);
  if (statement.ok() && pagoda::encode_revocation_payload(*statement) != text) __builtin_trap();
  // Behind a valid signature (signing costs ~50 us: only for inputs small enough to be plausible payloads).
  if (size <= 4096) {
    (void)pagoda::verify_anchor_envelope(signed_envelope(pagoda::kAnchorPayloadType, text), ctx);
    (void)pagoda::verify_revocation_envelope(signed_envelope(pagoda::kRevocationPayloadType, text), f.root, ctx.now, {});
  }
  return 0;
}
