#include "anchorbench/bench_anchor_signer.h"

#include <chrono>

#include "anchor/anchor_payload.h"
#include "anchor/dsse_envelope.h"

namespace pagoda::anchorbench {
namespace {
uint64_t unix_now() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}
}  // namespace

Result<BenchAnchorSigner> BenchAnchorSigner::create(const std::string& model_path, const Model& model,
                                                    const Ed25519KeyPair* key) {
  auto digest = sha256_file(model_path);
  if (!digest.ok()) return digest.error();
  BenchAnchorSigner s;
  s.model_ = &model;
  s.model_digest_ = *digest;
  s.key_ = key ? *key : ed25519_generate();
  s.keyid_ = ed25519_key_id(s.key_.public_key);
  s.root_.version = 1;
  s.root_.expires = unix_now() + 86400;
  s.root_.keys[s.keyid_] = s.key_.public_key;
  for (TrustRoleName r : {TrustRoleName::kRoot, TrustRoleName::kAnchor, TrustRoleName::kRevocation})
    s.root_.mutable_role(r) = TrustRole{{s.keyid_}, 1};
  return s;
}

AnchorVerifyContext BenchAnchorSigner::context() const {
  AnchorVerifyContext ctx;
  ctx.root = &root_;
  ctx.model_digest = model_digest_;
  ctx.now = unix_now();
  return ctx;
}

Result<SignedAnchor> BenchAnchorSigner::sign_and_verify(const std::string& text, const std::string& lineage) {
  AnchorPayload p;
  p.lineage = "bench/" + lineage;
  p.version = 1;
  p.kind = "memory";
  p.scope = "*";
  p.model = model_digest_;
  p.text = text;
  p.issued = unix_now() - 60;
  p.expires = unix_now() + 86400;
  DsseEnvelope env;
  env.payload_type = std::string(kAnchorPayloadType);
  env.payload = encode_anchor_payload(p);
  env.signatures.push_back({keyid_, ed25519_sign(dsse_pae(env.payload_type, env.payload), key_.secret_key)});
  return verify(write_dsse_envelope(env));
}

Result<SignedAnchor> BenchAnchorSigner::verify(const std::string& envelope_json) const {
  SignedAnchor out;
  out.envelope_json = envelope_json;
  const auto start = std::chrono::steady_clock::now();
  auto verified = verify_anchor_envelope(out.envelope_json, context());
  if (!verified.ok()) return verified.error();
  out.tokens = model_->tokenizer().encode(verified->payload.text, /*add_special=*/true, /*parse_special=*/false);
  out.verify_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.digest = verified->digest;
  return out;
}

Status BenchAnchorSigner::verify_again(const std::string& envelope_json) const {
  auto verified = verify_anchor_envelope(envelope_json, context());
  if (!verified.ok()) return verified.error();
  return {};
}

}  // namespace pagoda::anchorbench
