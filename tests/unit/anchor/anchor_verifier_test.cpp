// A simulated authority mints anchors with keys made from fixed seeds; the hostile cases of issue #11 that the
// verification layer decides (envelope, signatures, roles, thresholds, payload canonical form, fields, model,
// validity window) are each refused with their code, and a valid anchor is accepted.
#include "anchor/anchor_verifier.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "anchor/anchor_error.h"
#include "anchor/base64.h"
#include "anchor/cbor.h"
#include "anchor/dsse_envelope.h"
#include "test_authority.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

class AnchorVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override { use_root(auth.root_json()); }
  void use_root(const std::string& text) {
    auto r = parse_trust_root(text, kNow);
    ASSERT_TRUE(r.ok()) << r.error().message;
    root = *r;
  }
  Result<VerifiedAnchor> verify(const std::string& envelope, uint64_t now = kNow) {
    AnchorVerifyContext ctx;
    ctx.root = &root;
    ctx.model_digest = auth.model;
    ctx.now = now;
    ctx.revoked_keyids = revoked;
    return verify_anchor_envelope(envelope, ctx);
  }
  std::string code_of(const Result<VerifiedAnchor>& r) { return r.ok() ? "(ok)" : r.error().code; }

  Authority auth;
  TrustRoot root;
  std::set<std::string> revoked;
};

// Edits one signature of an envelope's JSON.
std::string with_sig(const std::string& envelope, const std::string& sig_bytes, size_t index = 0) {
  json j = json::parse(envelope);
  j["signatures"][index]["sig"] = encode_base64(sig_bytes);
  return j.dump();
}

std::string raw(const Ed25519Signature& s) { return std::string(reinterpret_cast<const char*>(s.data()), 64); }

TEST_F(AnchorVerifierTest, ValidAnchorVerifiesAndItsDigestIsTheSha256OfThePayload) {
  const std::string payload = encode_anchor_payload(auth.payload());
  auto r = verify(auth.envelope());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->digest, to_hex(sha256(payload)));
  EXPECT_EQ(r->payload.text, "The user prefers metric units.");
  EXPECT_EQ(r->payload.version, 3u);
  // Re-signing by the other anchor key keeps the identity.
  auto resigned = verify(auth.envelope(payload, {&auth.anchor_b}));
  ASSERT_TRUE(resigned.ok());
  EXPECT_EQ(resigned->digest, r->digest);
}

TEST_F(AnchorVerifierTest, FlippedPayloadBitIsABadSignature) {
  std::string payload = encode_anchor_payload(auth.payload());
  const std::string good = auth.envelope(payload, {&auth.anchor_a});
  json j = json::parse(good);
  payload[payload.size() / 2] ^= 0x01;
  j["payload"] = encode_base64(payload);
  EXPECT_EQ(code_of(verify(j.dump())), anchor_codes::kBadSignature);
}

TEST_F(AnchorVerifierTest, PayloadTypeChangedIsRefusedWhetherOrNotTheSignatureCoversIt) {
  const std::string payload = encode_anchor_payload(auth.payload());
  json j = json::parse(auth.envelope(payload, {&auth.anchor_a}));
  j["payloadType"] = "application/vnd.pagoda.revocation.v1+cbor";
  EXPECT_EQ(code_of(verify(j.dump())), anchor_codes::kWrongPayloadType);
  EXPECT_EQ(code_of(verify(auth.envelope(payload, {&auth.anchor_a}, "application/json"))),
            anchor_codes::kWrongPayloadType);
}

TEST_F(AnchorVerifierTest, UnknownSignerBehindATrustedKeyidIsABadSignatureAndWithoutOneUnknown) {
  const Ed25519KeyPair stranger = key_from(99);
  const std::string payload = encode_anchor_payload(auth.payload());
  DsseEnvelope e{
      std::string(kAnchorPayloadType), payload, {Authority::sign(std::string(kAnchorPayloadType), payload, stranger)}};
  e.signatures[0].keyid = ed25519_key_id(auth.anchor_a.public_key);  // the hint lies
  EXPECT_EQ(code_of(verify(write_dsse_envelope(e))), anchor_codes::kBadSignature);
  e.signatures[0].keyid = ed25519_key_id(stranger.public_key);
  EXPECT_EQ(code_of(verify(write_dsse_envelope(e))), anchor_codes::kUnknownKey);
}

TEST_F(AnchorVerifierTest, TrustedKeyOfAnotherRoleCountsForNothing) {
  const std::string payload = encode_anchor_payload(auth.payload());
  EXPECT_EQ(code_of(verify(auth.envelope(payload, {&auth.revoker}))), anchor_codes::kWrongRole);
  EXPECT_EQ(code_of(verify(auth.envelope(payload, {&auth.root_key, &auth.revoker}))), anchor_codes::kWrongRole);
}

TEST_F(AnchorVerifierTest, EmptyZeroShortAndIdentitySignaturesAreRefused) {
  const std::string good = auth.envelope();
  EXPECT_EQ(code_of(verify(with_sig(good, ""))), anchor_codes::kBadSignature);
  EXPECT_EQ(code_of(verify(with_sig(good, std::string(64, '\0')))), anchor_codes::kBadSignature);
  EXPECT_EQ(code_of(verify(with_sig(good, std::string(63, 'x')))), anchor_codes::kBadSignature);
  // (R = identity, S = 0) under the identity public key: libsodium refuses both the key and the signature.
  Ed25519PublicKey identity{};
  identity[0] = 1;
  Ed25519Signature sig{};
  sig[0] = 1;
  EXPECT_FALSE(ed25519_public_key_is_valid(identity));
  EXPECT_FALSE(ed25519_verify(sig, dsse_pae(kAnchorPayloadType, "anything"), identity));
  EXPECT_EQ(code_of(verify(with_sig(good, raw(sig)))), anchor_codes::kBadSignature);
  // A root that pins the identity key is refused when loaded.
  json r = json::parse(auth.root_json());
  const std::string id = ed25519_key_id(identity);
  r["keys"][id] = to_hex(identity);
  r["roles"]["anchor"]["keyids"].push_back(id);
  auto bad_root = parse_trust_root(r.dump(), kNow);
  ASSERT_FALSE(bad_root.ok());
  EXPECT_NE(bad_root.error().message.find("not a valid Ed25519 public key"), std::string::npos);
}

TEST_F(AnchorVerifierTest, NonCanonicalSIsRefused) {
  const std::string payload = encode_anchor_payload(auth.payload());
  Ed25519Signature sig = ed25519_sign(dsse_pae(kAnchorPayloadType, payload), auth.anchor_a.secret_key);
  // S + L, little-endian: the same point equation, a second encoding of S.
  static const uint8_t kL[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                                 0xa2, 0xde, 0xf9, 0xde, 0x14, 0,    0,    0,    0,    0,    0,
                                 0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10};
  unsigned carry = 0;
  for (int i = 0; i < 32; ++i) {
    const unsigned sum = sig[32 + i] + kL[i] + carry;
    sig[32 + i] = static_cast<uint8_t>(sum);
    carry = sum >> 8;
  }
  ASSERT_EQ(carry, 0u);
  EXPECT_EQ(code_of(verify(with_sig(auth.envelope(payload, {&auth.anchor_a}), raw(sig)))), anchor_codes::kBadSignature);
}

TEST_F(AnchorVerifierTest, ThresholdCountsDistinctKeysNotSignaturesOrKeyids) {
  use_root(auth.root_json(/*anchor_threshold=*/2));
  const std::string payload = encode_anchor_payload(auth.payload());
  EXPECT_EQ(code_of(verify(auth.envelope(payload, {&auth.anchor_a, &auth.anchor_a}))), anchor_codes::kThresholdNotMet);
  json j = json::parse(auth.envelope(payload, {&auth.anchor_a, &auth.anchor_a}));
  j["signatures"][1]["keyid"] = ed25519_key_id(auth.anchor_b.public_key);  // one key under two keyids
  EXPECT_EQ(code_of(verify(j.dump())), anchor_codes::kThresholdNotMet);
  auto both = verify(auth.envelope(payload, {&auth.anchor_a, &auth.anchor_b}));
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->signer_keyids, (std::set<std::string>{ed25519_key_id(auth.anchor_a.public_key),
                                                        ed25519_key_id(auth.anchor_b.public_key)}));
  // A revoked key no longer counts: the anchor it was needed for falls below the threshold.
  revoked.insert(ed25519_key_id(auth.anchor_b.public_key));
  EXPECT_EQ(code_of(verify(auth.envelope(payload, {&auth.anchor_a, &auth.anchor_b}))), anchor_codes::kRevoked);
}

TEST_F(AnchorVerifierTest, MalformedEnvelopes) {
  const std::string good = auth.envelope();
  json j = json::parse(good);
  std::vector<std::string> bad;
  j["payload"] = "@@@@";
  bad.push_back(j.dump());
  j = json::parse(good);
  j["payload"] = j["payload"].get<std::string>().substr(1);  // not a multiple of 4
  bad.push_back(j.dump());
  bad.push_back(good + " {}");                                  // trailing bytes
  bad.push_back("{\"payloadType\": \"x\", " + good.substr(1));  // duplicate key
  j = json::parse(good);
  j.erase("signatures");
  bad.push_back(j.dump());  // missing field
  j = json::parse(good);
  j["extra"] = 1;
  bad.push_back(j.dump());  // unknown field
  j = json::parse(good);
  j["signatures"] = json::array();
  bad.push_back(j.dump());  // no signature
  j = json::parse(good);
  for (int i = 0; i < 8; ++i) j["signatures"].push_back(j["signatures"][0]);
  bad.push_back(j.dump());  // 9 signatures
  bad.push_back("[]");
  bad.push_back("");
  bad.push_back(std::string(1000, '['));
  for (const std::string& text : bad) EXPECT_EQ(code_of(verify(text)), anchor_codes::kMalformedEnvelope) << text;
}

TEST_F(AnchorVerifierTest, OversizedInputsAreTooLargeAndHugeDeclaredLengthsCostNoMemory) {
  EXPECT_EQ(code_of(verify(std::string(kMaxEnvelopeBytes + 1, ' '))), anchor_codes::kTooLarge);
  AnchorPayload p = auth.payload();
  p.text = std::string(kMaxAnchorTextBytes + 1, 'a');
  EXPECT_EQ(code_of(verify(auth.envelope(encode_anchor_payload(p), {&auth.anchor_a}))), anchor_codes::kTooLarge);
  // A signed payload declaring a 2^62-byte text string in a few bytes.
  const std::string huge("\xa1\x64text\x7b\x40\x00\x00\x00\x00\x00\x00\x00", 15);
  EXPECT_EQ(code_of(verify(auth.envelope(huge, {&auth.anchor_a}))), anchor_codes::kNonCanonicalPayload);
}

// Re-encodes a payload map with one change, without sorting keys (to build non-canonical payloads).
std::string raw_map(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  out += static_cast<char>(0xa0 + entries.size());
  for (const auto& [k, v] : entries) out += encode_cbor(CborValue::text(k)) + v;
  return out;
}

TEST_F(AnchorVerifierTest, SignedButNonCanonicalOrInvalidPayloadsAreRefused) {
  const AnchorPayload p = auth.payload();
  auto u = [](uint64_t v) { return encode_cbor(CborValue::unsigned_int(v)); };
  auto t = [](const std::string& s) { return encode_cbor(CborValue::text(s)); };
  const std::string model =
      encode_cbor(CborValue::byte_string(std::string(reinterpret_cast<const char*>(p.model.data()), 32)));
  // Deterministic key order is by encoded bytes: shorter keys first.
  std::vector<std::pair<std::string, std::string>> sorted = {{"v", u(1)},
                                                             {"kind", t(p.kind)},
                                                             {"text", t(p.text)},
                                                             {"model", model},
                                                             {"scope", t(p.scope)},
                                                             {"issued", u(p.issued)},
                                                             {"expires", u(p.expires)},
                                                             {"lineage", t(p.lineage)},
                                                             {"version", u(p.version)}};
  ASSERT_EQ(raw_map(sorted), encode_anchor_payload(p)) << "the test's own encoding must match";
  auto sign = [&](const std::string& bytes) { return verify(auth.envelope(bytes, {&auth.anchor_a})); };

  auto unsorted = sorted;
  std::swap(unsorted[0], unsorted[1]);
  EXPECT_EQ(code_of(sign(raw_map(unsorted))), anchor_codes::kNonCanonicalPayload);
  auto non_shortest = sorted;
  non_shortest[0].second = std::string("\x18\x01", 2);  // 1 in two bytes
  EXPECT_EQ(code_of(sign(raw_map(non_shortest))), anchor_codes::kNonCanonicalPayload);
  auto with_float = sorted;
  with_float[0].second = std::string("\xf9\x3c\x00", 3);  // 1.0 as a half float
  EXPECT_EQ(code_of(sign(raw_map(with_float))), anchor_codes::kNonCanonicalPayload);
  auto with_tag = sorted;
  with_tag[8].second = std::string("\xc1", 1) + u(p.version);
  EXPECT_EQ(code_of(sign(raw_map(with_tag))), anchor_codes::kNonCanonicalPayload);
  EXPECT_EQ(code_of(sign(encode_anchor_payload(p) + std::string("\x00", 1))), anchor_codes::kNonCanonicalPayload);

  auto unknown = sorted;
  unknown.insert(unknown.begin() + 1, {"zz", u(0)});
  EXPECT_EQ(code_of(sign(raw_map(unknown))), anchor_codes::kBadField);
  auto missing = sorted;
  missing.pop_back();
  EXPECT_EQ(code_of(sign(raw_map(missing))), anchor_codes::kBadField);
  auto wrong_v = sorted;
  wrong_v[0].second = u(2);
  EXPECT_EQ(code_of(sign(raw_map(wrong_v))), anchor_codes::kBadField);
  AnchorPayload q = p;
  q.expires = q.issued;
  EXPECT_EQ(code_of(sign(encode_anchor_payload(q))), anchor_codes::kBadField);
  q = p;
  q.lineage = std::string(129, 'l');
  EXPECT_EQ(code_of(sign(encode_anchor_payload(q))), anchor_codes::kBadField);
  q = p;
  q.version = 0;
  EXPECT_EQ(code_of(sign(encode_anchor_payload(q))), anchor_codes::kBadField);
  EXPECT_EQ(code_of(sign(encode_cbor(CborValue::array({})))), anchor_codes::kBadField);
}

TEST_F(AnchorVerifierTest, ValidityWindowAndModel) {
  const AnchorPayload p = auth.payload();
  EXPECT_EQ(code_of(verify(auth.envelope(), p.expires)), anchor_codes::kExpired);
  EXPECT_TRUE(verify(auth.envelope(), p.expires - 1).ok());
  EXPECT_EQ(code_of(verify(auth.envelope(), p.issued - 1)), anchor_codes::kNotYetValid);
  AnchorPayload other = p;
  other.model = sha256("another model");
  EXPECT_EQ(code_of(verify(auth.envelope(encode_anchor_payload(other), {&auth.anchor_a}))), anchor_codes::kWrongModel);
}

TEST(TrustRoot, RefusesWhatWouldWeakenIt) {
  Authority auth;
  const std::string good = auth.root_json();
  ASSERT_TRUE(parse_trust_root(good, kNow).ok());
  auto refused = [&](const std::string& text, const std::string& why) {
    auto r = parse_trust_root(text, kNow);
    EXPECT_FALSE(r.ok()) << why;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
    }
  };
  refused(auth.root_json(1, kNow), "expired");
  refused(auth.root_json(0), "threshold 0");
  refused(auth.root_json(3), "threshold 3");
  json j = json::parse(good);
  const std::string id = j["keys"].begin().key();
  j["keys"][id] = to_hex(auth.revoker.public_key);  // keyid of another key
  refused(j.dump(), "is not the SHA-256 of its key");
  j = json::parse(good);
  j["roles"]["anchor"]["keyids"].push_back(j["roles"]["anchor"]["keyids"][0]);
  refused(j.dump(), "twice");
  j = json::parse(good);
  j["roles"]["anchor"]["keyids"].push_back(std::string(64, 'a'));
  refused(j.dump(), "not in 'keys'");
  j = json::parse(good);
  j["roles"].erase("revocation");
  refused(j.dump(), "lacks 'revocation'");
  j = json::parse(good);
  j["roles"]["mirror"] = j["roles"]["root"];
  refused(j.dump(), "unknown key 'mirror'");
  refused("{\"version\": 2, " + good.substr(1), "duplicate key 'version'");
  j = json::parse(good);
  j["version"] = 0;
  refused(j.dump(), "'version'");
}

}  // namespace
}  // namespace pagoda
