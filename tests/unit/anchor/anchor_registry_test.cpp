// The registry's hostile cases (issue #11, 7): rollback and lineage conflicts, revoked digests, lineages and keys,
// revocation ordering and freeze protection, tenant scope, root rotation, restarts. After each refusal: the same
// error code, and the persisted state byte for byte unchanged.
#include "anchor/anchor_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "anchor/anchor_error.h"
#include "test_authority.h"
#include "util/atomic_file.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class AnchorRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("pagoda-registry-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    root_path = (dir / "root.json").string();
    std::ofstream(root_path) << auth.root_json();
    reopen();
  }
  void TearDown() override { fs::remove_all(dir); }

  void reopen() {
    registry.reset();
    auto r = AnchorRegistry::open(config());
    ASSERT_TRUE(r.ok()) << r.error().message;
    registry = std::move(*r);
  }
  AnchorRegistryConfig config() {
    AnchorRegistryConfig c;
    c.trust_root_path = root_path;
    c.state_dir = (dir / "state").string();
    c.model_digest = auth.model;
    c.max_tokens = 64;
    // A stand-in tokenizer: one token per byte after a BOS (the registry only counts and stores them).
    c.tokenize = [](const std::string& text) {
      std::vector<int32_t> t{1};
      for (unsigned char ch : text) t.push_back(ch);
      return t;
    };
    c.now = [this] { return now; };
    return c;
  }
  std::string state_bytes() {
    auto s = read_small_file((dir / "state" / "state.json").string(), 1 << 20);
    return s.ok() ? *s : "(none)";
  }
  // Registers and expects refusal with `code`, the state unchanged.
  void expect_refused(const std::string& envelope, const std::string& code) {
    const std::string before = state_bytes();
    const size_t count = registry->list().size();
    auto r = registry->register_anchor(envelope);
    ASSERT_FALSE(r.ok()) << "expected " << code;
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_EQ(state_bytes(), before) << "a refusal changed the persisted state";
    EXPECT_EQ(registry->list().size(), count);
  }
  AnchorPayload version(uint64_t v, const std::string& text = "fact") {
    AnchorPayload p = auth.payload();
    p.version = v;
    p.text = text;
    return p;
  }
  std::string activate(const std::string& envelope) {
    auto r = registry->register_anchor(envelope);
    EXPECT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(registry->prepare_activation(r->digest).ok());
    EXPECT_TRUE(registry->mark_active(r->digest, 1).ok());
    return r->digest;
  }

  Authority auth;
  uint64_t now = kNow;
  fs::path dir;
  std::string root_path;
  std::unique_ptr<AnchorRegistry> registry;
};

TEST_F(AnchorRegistryTest, ValidAnchorRegistersOnceAndActivates) {
  auto r = registry->register_anchor(auth.envelope());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->state, AnchorState::kVerified);
  EXPECT_EQ(r->tokens.size(), 1 + auth.payload().text.size());
  auto again = registry->register_anchor(auth.envelope());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, r->digest);
  EXPECT_EQ(registry->list().size(), 1u);
  ASSERT_TRUE(registry->prepare_activation(r->digest).ok());
  ASSERT_TRUE(registry->mark_active(r->digest, 2).ok());
  EXPECT_EQ(registry->get(r->digest)->state, AnchorState::kActive);
  EXPECT_TRUE(registry->resolve_for_request(r->digest, "any-tenant").ok());
}

TEST_F(AnchorRegistryTest, TokenCapIsEnforced) {
  expect_refused(auth.envelope(version(1, std::string(64, 'x')), auth.anchor_a), anchor_codes::kTooLarge);
}

TEST_F(AnchorRegistryTest, RollbackAndSameVersionConflict) {
  ASSERT_TRUE(registry->register_anchor(auth.envelope(version(5), auth.anchor_a)).ok());
  expect_refused(auth.envelope(version(4), auth.anchor_a), anchor_codes::kRollback);
  expect_refused(auth.envelope(version(5, "other text"), auth.anchor_a), anchor_codes::kLineageConflict);
  // Re-signing the same payload by the other key is the same anchor, not a conflict.
  EXPECT_TRUE(registry->register_anchor(auth.envelope(version(5), auth.anchor_b)).ok());
  EXPECT_TRUE(registry->register_anchor(auth.envelope(version(6), auth.anchor_a)).ok());
  // After a restart the high-water mark still holds.
  reopen();
  expect_refused(auth.envelope(version(6, "third text"), auth.anchor_a), anchor_codes::kLineageConflict);
  expect_refused(auth.envelope(version(2), auth.anchor_a), anchor_codes::kRollback);
}

TEST_F(AnchorRegistryTest, ActivatingVersionNPlusOneDeactivatesN) {
  const std::string v1 = activate(auth.envelope(version(1), auth.anchor_a));
  auto v2 = registry->register_anchor(auth.envelope(version(2), auth.anchor_a));
  ASSERT_TRUE(v2.ok());
  auto superseded = registry->mark_active(v2->digest, 1);
  ASSERT_TRUE(superseded.ok());
  EXPECT_EQ(*superseded, std::vector<std::string>{v1});
  EXPECT_EQ(registry->get(v1)->state, AnchorState::kInactive);
}

TEST_F(AnchorRegistryTest, RevokedDigestStaysRevokedAfterReSigningAndRestart) {
  const std::string d = activate(auth.envelope());
  RevocationStatement s{.version = 1, .issued = now - 1, .expires = now + 3600, .digests = {d}, .lineages = {}, .keyids = {}};
  auto out = registry->apply_revocation(auth.revocation(s));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->revoked, std::vector<std::string>{d});
  EXPECT_EQ(registry->get(d)->state, AnchorState::kRevoked);
  EXPECT_EQ(registry->resolve_for_request(d, "").error().code, "anchor_not_found");
  expect_refused(auth.envelope(auth.payload(), auth.anchor_b), anchor_codes::kRevoked);  // re-signed
  reopen();
  EXPECT_EQ(registry->get(d)->state, AnchorState::kRevoked);
  expect_refused(auth.envelope(), anchor_codes::kRevoked);
  EXPECT_EQ(registry->prepare_activation(d).error().code, anchor_codes::kRevoked);
}

TEST_F(AnchorRegistryTest, RevokedLineageAndRevokedSigningKey) {
  const std::string by_a = activate(auth.envelope(version(1), auth.anchor_a));
  AnchorPayload other = auth.payload();
  other.lineage = "other";
  const std::string by_b = activate(auth.envelope(other, auth.anchor_b));
  RevocationStatement s{.version = 1, .issued = now - 1, .expires = now + 3600, .digests = {}, .lineages = {},
                        .keyids = {ed25519_key_id(auth.anchor_b.public_key)}};
  auto out = registry->apply_revocation(auth.revocation(s));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->revoked, std::vector<std::string>{by_b}) << "only the anchor the revoked key alone supported";
  EXPECT_EQ(registry->get(by_a)->state, AnchorState::kActive);
  other.version = 2;
  expect_refused(auth.envelope(other, auth.anchor_b), anchor_codes::kRevoked);
  RevocationStatement s2{.version = 2, .issued = now - 1, .expires = now + 3600, .digests = {}, .lineages = {"user-42/memory"}, .keyids = {}};
  ASSERT_TRUE(registry->apply_revocation(auth.revocation(s2)).ok());
  EXPECT_EQ(registry->get(by_a)->state, AnchorState::kRevoked);
  expect_refused(auth.envelope(version(9), auth.anchor_a), anchor_codes::kRevoked);
}

TEST_F(AnchorRegistryTest, OlderStatementAfterNewerAndForeignSignerAreRefused) {
  RevocationStatement s{.version = 5, .issued = now - 1, .expires = now + 3600, .digests = {}, .lineages = {}, .keyids = {}};
  ASSERT_TRUE(registry->apply_revocation(auth.revocation(s)).ok());
  const std::string before = state_bytes();
  s.version = 4;
  EXPECT_EQ(registry->apply_revocation(auth.revocation(s)).error().code, anchor_codes::kRollback);
  s.version = 5;
  EXPECT_EQ(registry->apply_revocation(auth.revocation(s)).error().code, anchor_codes::kRollback);
  s.version = 6;
  EXPECT_EQ(registry->apply_revocation(auth.revocation(s, &auth.anchor_a)).error().code, anchor_codes::kWrongRole);
  EXPECT_EQ(state_bytes(), before);
}

TEST_F(AnchorRegistryTest, ExpiredRevocationStatementBlocksNewActivations) {
  auto r = registry->register_anchor(auth.envelope());
  ASSERT_TRUE(r.ok());
  RevocationStatement s{.version = 1, .issued = now - 1, .expires = now + 10, .digests = {}, .lineages = {}, .keyids = {}};
  ASSERT_TRUE(registry->apply_revocation(auth.revocation(s)).ok());
  EXPECT_TRUE(registry->prepare_activation(r->digest).ok());
  now += 11;
  EXPECT_EQ(registry->prepare_activation(r->digest).error().code, "revocation_stale");
  s.version = 2;
  s.issued = now - 1;
  s.expires = now + 100;
  ASSERT_TRUE(registry->apply_revocation(auth.revocation(s)).ok());
  EXPECT_TRUE(registry->prepare_activation(r->digest).ok());
  // An expired statement itself is refused (it could only be a replay).
  s.version = 3;
  s.expires = now - 1;
  s.issued = now - 50;
  EXPECT_EQ(registry->apply_revocation(auth.revocation(s)).error().code, anchor_codes::kExpired);
}

TEST_F(AnchorRegistryTest, ActiveAnchorPassingItsExpiryIsReportedOnce) {
  const std::string d = activate(auth.envelope());
  EXPECT_TRUE(registry->expire_due().empty());
  now = auth.payload().expires;
  EXPECT_EQ(registry->expire_due(), std::vector<std::string>{d});
  EXPECT_TRUE(registry->expire_due().empty());
  EXPECT_EQ(registry->get(d)->state, AnchorState::kExpired);
  EXPECT_EQ(registry->prepare_activation(d).error().code, anchor_codes::kExpired);
}

TEST_F(AnchorRegistryTest, ScopeUnknownAndInactiveAllLookTheSame) {
  AnchorPayload p = auth.payload();
  p.scope = "tenant-a";
  const std::string d = activate(auth.envelope(p, auth.anchor_a));
  EXPECT_TRUE(registry->resolve_for_request(d, "tenant-a").ok());
  auto other = registry->resolve_for_request(d, "tenant-b");
  auto unknown = registry->resolve_for_request(std::string(64, 'f'), "tenant-b");
  ASSERT_FALSE(other.ok());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(other.error().code, "anchor_not_found");
  EXPECT_EQ(unknown.error().code, "anchor_not_found");
  auto verified_only = registry->register_anchor(auth.envelope(version(7), auth.anchor_a));
  ASSERT_TRUE(verified_only.ok());
  EXPECT_EQ(registry->resolve_for_request(verified_only->digest, "").error().code, "anchor_not_found");
}

TEST_F(AnchorRegistryTest, RootRotationNeedsBothThresholdsAndSurvivesRestart) {
  const Ed25519KeyPair new_root = key_from(77);
  // The next root: the same keys but root role moved to a new key.
  nlohmann::json next = nlohmann::json::parse(auth.root_json(1, kNow + 86400, 2));
  const std::string new_id = ed25519_key_id(new_root.public_key);
  next["keys"][new_id] = to_hex(new_root.public_key);
  next["roles"]["root"]["keyids"] = {new_id};
  const std::string payload = next.dump();
  const std::string type(kRootPayloadType);
  auto rotation = [&](std::vector<const Ed25519KeyPair*> signers) { return auth.envelope(payload, signers, type); };
  EXPECT_EQ(registry->rotate_root(rotation({&new_root})).error().code, anchor_codes::kUnknownKey) << "new keys only";
  EXPECT_EQ(registry->rotate_root(rotation({&auth.root_key})).error().code, anchor_codes::kWrongRole)
      << "old keys only: the new root's role is not met (the old root key is only a plain key there)";
  auto ok = registry->rotate_root(rotation({&auth.root_key, &new_root}));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->version, 2u);
  EXPECT_TRUE(ok->revoked.empty()) << "the new root keeps the anchor keys";
  EXPECT_EQ(registry->rotate_root(rotation({&auth.root_key, &new_root})).error().code, anchor_codes::kRollback)
      << "replaying the rotation: version 2 is not the next version";
  reopen();  // the operator's file still says version 1: the state's newer root wins
  EXPECT_EQ(registry->root_version(), 2u);
}

TEST_F(AnchorRegistryTest, CorruptStateStopsTheStartNamingTheFile) {
  ASSERT_TRUE(registry->register_anchor(auth.envelope()).ok());
  registry.reset();
  std::ofstream(dir / "state" / "state.json") << "{\"format\": 1, \"root\": ";
  auto r = AnchorRegistry::open(config());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("state.json"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("corrupt"), std::string::npos) << r.error().message;
}

TEST_F(AnchorRegistryTest, RestartRestoresActiveAnchorsAndReplaysNothingRefused) {
  const std::string d = activate(auth.envelope(version(3), auth.anchor_a));
  expect_refused(auth.envelope(version(2), auth.anchor_a), anchor_codes::kRollback);
  reopen();
  EXPECT_EQ(registry->active_digests(), std::vector<std::string>{d});
  EXPECT_EQ(registry->list().size(), 1u) << "the refused anchor left no trace";
  expect_refused(auth.envelope(version(2), auth.anchor_a), anchor_codes::kRollback);
}

TEST_F(AnchorRegistryTest, KvComesFromTheVerifiedBytesNotTheFileOnDisk) {
  auto r = registry->register_anchor(auth.envelope());
  ASSERT_TRUE(r.ok());
  // Someone rewrites the stored envelope between verification and activation.
  std::ofstream(dir / "state" / "envelopes" / (r->digest + ".json")) << auth.envelope(version(9, "evil"), auth.anchor_a);
  auto rec = registry->prepare_activation(r->digest);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->tokens, r->tokens) << "activation must use the tokens of the verified payload";
  EXPECT_EQ(rec->payload.text, auth.payload().text);
  // At the next start the changed file no longer verifies as that digest: the start refuses it, naming it.
  registry.reset();
  auto reopened = AnchorRegistry::open(config());
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.error().message.find(r->digest), std::string::npos) << reopened.error().message;
}

TEST_F(AnchorRegistryTest, RestartKeepsStatesAndRestoresActiveAnchorsEvenWithAStaleRevocation) {
  const std::string active = activate(auth.envelope(version(1), auth.anchor_a));
  AnchorPayload other = auth.payload();
  other.lineage = "other";
  auto verified = registry->register_anchor(auth.envelope(other, auth.anchor_a));
  ASSERT_TRUE(verified.ok());
  RevocationStatement s{.version = 1, .issued = now - 1, .expires = now + 10, .digests = {}, .lineages = {}, .keyids = {}};
  ASSERT_TRUE(registry->apply_revocation(auth.revocation(s)).ok());
  now += 60;  // the statement is stale now
  reopen();
  EXPECT_EQ(registry->get(active)->state, AnchorState::kActive);
  EXPECT_EQ(registry->get(verified->digest)->state, AnchorState::kVerified) << "never activated: still verified";
  EXPECT_TRUE(registry->prepare_activation(active, /*restoring=*/true).ok()) << "a restart restores what was active";
  EXPECT_EQ(registry->prepare_activation(verified->digest).error().code, "revocation_stale") << "new activations wait";
}

TEST_F(AnchorRegistryTest, GarbledStoredEnvelopeStopsTheStart) {
  auto r = registry->register_anchor(auth.envelope());
  ASSERT_TRUE(r.ok());
  registry.reset();
  std::ofstream(dir / "state" / "envelopes" / (r->digest + ".json")) << "{\"payloadType\": 1}";
  auto reopened = AnchorRegistry::open(config());
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.error().message.find("no longer verifies"), std::string::npos) << reopened.error().message;
}

TEST_F(AnchorRegistryTest, OlderVersionCannotBeActivatedBesideANewerOneAndOnlyActiveAnchorsDeactivate) {
  auto v1 = registry->register_anchor(auth.envelope(version(1), auth.anchor_a));
  ASSERT_TRUE(v1.ok());
  const std::string v2 = activate(auth.envelope(version(2), auth.anchor_a));
  EXPECT_EQ(registry->prepare_activation(v1->digest).error().code, anchor_codes::kRollback);
  EXPECT_EQ(registry->mark_inactive(v1->digest).error().code, "anchor_not_active");
  EXPECT_TRUE(registry->mark_inactive(v2).ok());
  EXPECT_EQ(registry->get(v2)->state, AnchorState::kInactive);
  EXPECT_EQ(registry->get(v2)->pinned_blocks, 0);
}

TEST_F(AnchorRegistryTest, RotationToARootWithoutTheAnchorKeysRevokesTheirAnchorsAndRevokedKeysDoNotCount) {
  const std::string d = activate(auth.envelope());
  const Ed25519KeyPair new_anchor = key_from(88);
  nlohmann::json next = nlohmann::json::parse(auth.root_json(1, kNow + 86400, 2));
  const std::string new_id = ed25519_key_id(new_anchor.public_key);
  next["keys"][new_id] = to_hex(new_anchor.public_key);
  next["roles"]["anchor"]["keyids"] = {new_id};
  const std::string payload = next.dump();
  const std::string type(kRootPayloadType);
  // With the root key revoked first, its signature counts for nothing.
  RevocationStatement s{.version = 1, .issued = now - 1, .expires = now + 3600, .digests = {}, .lineages = {},
                        .keyids = {ed25519_key_id(auth.root_key.public_key)}};
  auto revoked_root_key = registry->apply_revocation(auth.revocation(s));
  ASSERT_TRUE(revoked_root_key.ok());
  EXPECT_EQ(registry->rotate_root(auth.envelope(payload, {&auth.root_key}, type)).error().code, anchor_codes::kRevoked);
  // Without that revocation (a fresh folder), the rotation goes through and revokes the anchor its new root drops.
  fs::remove_all(dir / "state");
  reopen();
  const std::string d2 = activate(auth.envelope());
  EXPECT_EQ(d2, d);
  auto out = registry->rotate_root(auth.envelope(payload, {&auth.root_key}, type));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->version, 2u);
  EXPECT_EQ(out->revoked, std::vector<std::string>{d});
  EXPECT_EQ(registry->get(d)->state, AnchorState::kRevoked);
  EXPECT_TRUE(registry->register_anchor(auth.envelope(version(5), new_anchor)).ok()) << "the new anchor key signs";
}

TEST_F(AnchorRegistryTest, ReadOnlyCheckMakesTheRegistryChecksAndWritesNothing) {
  const std::string d = activate(auth.envelope(version(4), auth.anchor_a));
  registry.reset();
  const std::string before = state_bytes();
  AnchorRegistryConfig c = config();
  c.read_only = true;
  auto ro = AnchorRegistry::open(c);
  ASSERT_TRUE(ro.ok()) << ro.error().message;
  EXPECT_EQ((*ro)->check_anchor(auth.envelope(version(3), auth.anchor_a)).error().code, anchor_codes::kRollback);
  auto fresh = (*ro)->check_anchor(auth.envelope(version(5), auth.anchor_a));
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_FALSE((*ro)->get(fresh->digest)) << "a check registers nothing";
  EXPECT_EQ((*ro)->check_anchor(auth.envelope(version(4), auth.anchor_a))->digest, d);
  EXPECT_FALSE((*ro)->mark_inactive(d).ok()) << "read-only: no write";
  EXPECT_EQ(state_bytes(), before);
  c.state_dir = (dir / "no-such-state").string();
  EXPECT_FALSE(AnchorRegistry::open(c).ok());
  EXPECT_FALSE(fs::exists(dir / "no-such-state"));
}

}  // namespace
}  // namespace pagoda
