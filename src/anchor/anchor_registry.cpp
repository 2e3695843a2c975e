#include "anchor/anchor_registry.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "anchor/anchor_error.h"
#include "anchor/strict_json.h"
#include "util/atomic_file.h"

namespace pagoda {

using json = nlohmann::json;

namespace {
constexpr size_t kMaxStateBytes = size_t{64} << 20;
constexpr const char* kNotFound = "anchor_not_found";
constexpr const char* kRevocationStale = "revocation_stale";

Error not_found(const std::string& digest) {
  return make_coded_error(kNotFound, "no active anchor " + digest + " is available to this request");
}
}  // namespace

const char* anchor_state_name(AnchorState state) {
  switch (state) {
    case AnchorState::kVerified:
      return "verified";
    case AnchorState::kActive:
      return "active";
    case AnchorState::kRevoked:
      return "revoked";
    case AnchorState::kExpired:
      return "expired";
    case AnchorState::kInactive:
      break;
  }
  return "inactive";
}

std::string AnchorRegistry::envelope_path(const std::string& digest) const {
  return config_.state_dir + "/envelopes/" + digest + ".json";
}

AnchorVerifyContext AnchorRegistry::verify_context_locked(uint64_t now) const {
  AnchorVerifyContext ctx;
  ctx.root = &root_;
  ctx.model_digest = config_.model_digest;
  ctx.now = now;
  ctx.revoked_keyids = revoked_keyids_;
  return ctx;
}

Result<std::unique_ptr<AnchorRegistry>> AnchorRegistry::open(AnchorRegistryConfig config) {
  if (!config.now || !config.tokenize) return make_error("anchor registry: a clock and a tokenizer are required");
  std::unique_ptr<AnchorRegistry> r(new AnchorRegistry(std::move(config)));
  const uint64_t now = r->config_.now();
  auto text = read_small_file(r->config_.trust_root_path, kMaxEnvelopeBytes);
  if (!text.ok()) return make_error("--anchor-trust-root: " + text.error().message);
  auto pinned = parse_trust_root(*text, now);
  // An expired operator root is fine when the state folder holds a newer one reached by valid rotations.
  std::optional<TrustRoot> from_file;
  if (pinned.ok()) from_file = std::move(*pinned);
  std::string file_error = pinned.ok() ? "" : pinned.error().message;
  if (!r->config_.state_dir.empty() && r->config_.read_only) {
    struct stat st;
    if (::stat((r->config_.state_dir + "/state.json").c_str(), &st) != 0)
      return make_error("anchor state: no state.json in '" + r->config_.state_dir + "'");
  } else if (!r->config_.state_dir.empty()) {
    ::mkdir(r->config_.state_dir.c_str(), 0700);
    ::mkdir((r->config_.state_dir + "/envelopes").c_str(), 0700);
    struct stat st;
    if (::stat((r->config_.state_dir + "/envelopes").c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return make_error("--anchor-state-dir: cannot create '" + r->config_.state_dir + "/envelopes'");
  }
  if (from_file) r->root_ = *from_file;
  if (Status st = r->load_state(); !st.ok()) return st.error();  // may replace root_ with a newer one
  if (r->root_.version == 0)
    return make_error("--anchor-trust-root '" + r->config_.trust_root_path + "': " + file_error);
  if (from_file && from_file->version > r->root_.version) r->root_ = *from_file;
  std::lock_guard lock(r->mu_);
  if (!r->config_.read_only)
    if (Status st = r->persist_locked(); !st.ok()) return st.error();
  return r;
}

Status AnchorRegistry::load_state() {
  if (config_.state_dir.empty()) return Status::success();
  const std::string path = config_.state_dir + "/state.json";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::success();  // a new state folder
  auto text = read_small_file(path, kMaxStateBytes);
  if (!text.ok()) return make_error("anchor state: " + text.error().message);
  auto parsed = parse_strict_json(*text, 8);
  auto corrupt = [&](const std::string& why) { return make_error("anchor state file '" + path + "' is corrupt: " + why); };
  if (!parsed.ok()) return corrupt(parsed.error().message);
  const json& j = *parsed;
  try {
    if (j.at("format").get<int>() != 1) return corrupt("unknown format");
    const uint64_t now = config_.now();
    // The stored root was accepted before; it may have expired since, which fails closed below unless the
    // operator's file is newer.
    auto stored_root = parse_trust_root(j.at("root").get<std::string>(), 0);
    if (!stored_root.ok()) return corrupt(stored_root.error().message);
    if (stored_root->version > root_.version) {
      if (stored_root->expires <= now)
        return make_error("the newest trust root (version " + std::to_string(stored_root->version) + ", in '" + path +
                          "') has expired; rotate to a new root");
      root_ = *stored_root;
    }
    revocation_version_ = j.at("revocation").at("version").get<uint64_t>();
    revocation_expires_ = j.at("revocation").at("expires").get<uint64_t>();
    for (const auto& d : j.at("tombstones").at("digests")) revoked_digests_.insert(d.get<std::string>());
    for (const auto& l : j.at("tombstones").at("lineages")) revoked_lineages_.insert(l.get<std::string>());
    for (const auto& k : j.at("tombstones").at("keyids")) revoked_keyids_.insert(k.get<std::string>());
    for (const auto& [lineage, mark] : j.at("lineages").items())
      lineages_[lineage] = LineageMark{mark.at("version").get<uint64_t>(), mark.at("digest").get<std::string>()};
    // Every stored anchor is verified again with today's root, clock and revocations.
    for (const auto& [digest, entry] : j.at("anchors").items()) {
      const std::string stored = entry.at("state").get<std::string>();
      auto envelope = read_small_file(envelope_path(digest), kMaxEnvelopeBytes);
      if (!envelope.ok()) return make_error("anchor state: " + envelope.error().message);
      AnchorRecord rec;
      rec.digest = digest;
      rec.envelope_json = *envelope;
      rec.registered_at = entry.at("registered_at").get<uint64_t>();
      rec.state_changed_at = now;
      auto v = verify_anchor_envelope(*envelope, verify_context_locked(now));
      if (v.ok() && v->digest != digest) return corrupt("envelope file of " + digest + " holds another anchor");
      if (v.ok()) {
        rec.payload = v->payload;
        rec.tokens = config_.tokenize(rec.payload.text);
        const bool revoked = revoked_digests_.count(digest) || revoked_lineages_.count(rec.payload.lineage);
        rec.state = revoked ? AnchorState::kRevoked
                    : stored == "active" ? AnchorState::kActive
                    : stored == "verified" ? AnchorState::kVerified
                    : AnchorState::kInactive;
      } else {
        const std::string& code = v.error().code;
        if (code == anchor_codes::kExpired) {
          rec.state = AnchorState::kExpired;
        } else if (code == anchor_codes::kRevoked || code == anchor_codes::kUnknownKey ||
                   code == anchor_codes::kWrongRole || code == anchor_codes::kThresholdNotMet) {
          rec.state = AnchorState::kRevoked;  // its keys were revoked, or a rotated root no longer has them
        } else if (code == anchor_codes::kWrongModel) {
          return make_error("anchor state in '" + config_.state_dir + "' was made for another model (anchor " + digest +
                            "): use a state folder per model");
        } else {
          return make_error("anchor state: the stored envelope '" + envelope_path(digest) + "' no longer verifies (" +
                            code + ": " + v.error().message + "): the state folder was changed");
        }
      }
      anchors_[digest] = std::move(rec);
    }
  } catch (const json::exception& e) {
    return corrupt(e.what());
  }
  return Status::success();
}

namespace {
// A failed write to the state folder (a full disk, a file-size limit, an I/O error): coded, so that the admin API
// answers it as the server's failure, not the request's; the change it was saving is not made.
Status saved(Status st) {
  if (st.ok()) return st;
  return make_coded_error(anchor_codes::kStateWriteFailed,
                          "the anchor state could not be saved, so nothing changed: " + st.error().message);
}
}  // namespace

Status AnchorRegistry::persist_locked() const {
  if (config_.read_only) return make_error("anchor state '" + config_.state_dir + "' is open read-only");
  if (config_.state_dir.empty()) return Status::success();
  json anchors = json::object();
  for (const auto& [digest, rec] : anchors_)
    anchors[digest] = {{"state", anchor_state_name(rec.state)}, {"registered_at", rec.registered_at}};
  json lineages = json::object();
  for (const auto& [l, m] : lineages_) lineages[l] = {{"version", m.version}, {"digest", m.digest}};
  const json state = {{"format", 1},
                      {"root", root_.json_text},
                      {"revocation", {{"version", revocation_version_}, {"expires", revocation_expires_}}},
                      {"tombstones",
                       {{"digests", revoked_digests_}, {"lineages", revoked_lineages_}, {"keyids", revoked_keyids_}}},
                      {"lineages", lineages},
                      {"anchors", anchors}};
  return saved(write_file_atomically(config_.state_dir + "/state.json", state.dump(1)));
}

Status AnchorRegistry::check_registrable_locked(const VerifiedAnchor& v) const {
  if (revoked_digests_.count(v.digest))
    return make_coded_error(anchor_codes::kRevoked, "anchor " + v.digest + " was revoked");
  if (revoked_lineages_.count(v.payload.lineage))
    return make_coded_error(anchor_codes::kRevoked, "lineage '" + v.payload.lineage + "' was revoked");
  if (auto it = lineages_.find(v.payload.lineage); it != lineages_.end()) {
    if (v.payload.version < it->second.version)
      return make_coded_error(anchor_codes::kRollback, "lineage '" + v.payload.lineage + "' is at version " +
                                                           std::to_string(it->second.version) + "; version " +
                                                           std::to_string(v.payload.version) + " is older");
    if (v.payload.version == it->second.version && v.digest != it->second.digest)
      return make_coded_error(anchor_codes::kLineageConflict,
                              "lineage '" + v.payload.lineage + "' version " + std::to_string(v.payload.version) +
                                  " is already anchor " + it->second.digest);
  }
  return Status::success();
}

Result<AnchorRecord> AnchorRegistry::checked_record_locked(std::string_view envelope_json, uint64_t now,
                                                         bool* known) const {
  *known = false;
  auto v = verify_anchor_envelope(envelope_json, verify_context_locked(now));
  if (!v.ok()) return v.error();
  if (revoked_digests_.count(v->digest) || revoked_lineages_.count(v->payload.lineage))
    return make_coded_error(anchor_codes::kRevoked, "anchor " + v->digest + " (lineage '" + v->payload.lineage +
                                                        "') was revoked");
  if (auto it = anchors_.find(v->digest); it != anchors_.end()) {  // the same anchor again
    *known = true;
    return it->second;
  }
  if (Status st = check_registrable_locked(*v); !st.ok()) return st.error();
  AnchorRecord rec;
  rec.tokens = config_.tokenize(v->payload.text);
  if (static_cast<int32_t>(rec.tokens.size()) > config_.max_tokens)
    return make_coded_error(anchor_codes::kTooLarge, "the anchor's text is " + std::to_string(rec.tokens.size()) +
                                                         " tokens; at most " + std::to_string(config_.max_tokens));
  rec.digest = v->digest;
  rec.payload = v->payload;
  rec.envelope_json = std::string(envelope_json);
  rec.registered_at = rec.state_changed_at = now;
  return rec;
}

Result<AnchorRecord> AnchorRegistry::check_anchor(std::string_view envelope_json) const {
  std::lock_guard lock(mu_);
  bool known = false;
  return checked_record_locked(envelope_json, config_.now(), &known);
}

Result<AnchorRecord> AnchorRegistry::register_anchor(std::string_view envelope_json) {
  std::lock_guard lock(mu_);
  const uint64_t now = config_.now();
  bool known = false;
  auto checked = checked_record_locked(envelope_json, now, &known);
  if (!checked.ok() || known) return checked;
  AnchorRecord rec = std::move(*checked);
  if (!config_.state_dir.empty())
    if (Status st = saved(write_file_atomically(envelope_path(rec.digest), envelope_json)); !st.ok())
      return st.error();
  const LineageMark previous = lineages_[rec.payload.lineage];
  lineages_[rec.payload.lineage] = LineageMark{rec.payload.version, rec.digest};
  anchors_[rec.digest] = rec;
  if (Status st = persist_locked(); !st.ok()) {  // nothing changes unless it is on disk
    anchors_.erase(rec.digest);
    if (previous.version == 0)
      lineages_.erase(rec.payload.lineage);
    else
      lineages_[rec.payload.lineage] = previous;
    return st.error();
  }
  return rec;
}

Result<AnchorRecord> AnchorRegistry::prepare_activation(const std::string& digest, bool restoring) {
  std::lock_guard lock(mu_);
  auto it = anchors_.find(digest);
  if (it == anchors_.end()) return make_coded_error(kNotFound, "no anchor " + digest + " is registered");
  AnchorRecord& rec = it->second;
  if (rec.state == AnchorState::kRevoked) return make_coded_error(anchor_codes::kRevoked, "anchor " + digest + " was revoked");
  const uint64_t now = config_.now();
  if (rec.state == AnchorState::kExpired || now >= rec.payload.expires)
    return make_coded_error(anchor_codes::kExpired, "anchor " + digest + " has expired");
  if (static_cast<int32_t>(rec.tokens.size()) > config_.max_tokens)
    return make_coded_error(anchor_codes::kTooLarge, "the anchor's text is " + std::to_string(rec.tokens.size()) +
                                                         " tokens; at most " + std::to_string(config_.max_tokens));
  for (const auto& [d, other] : anchors_)
    if (other.state == AnchorState::kActive && other.payload.lineage == rec.payload.lineage &&
        other.payload.version > rec.payload.version)
      return make_coded_error(anchor_codes::kRollback, "version " + std::to_string(other.payload.version) +
                                                           " of lineage '" + rec.payload.lineage + "' is active");
  // Freeze protection: once revocation statements are in use, a stale one cannot hide a newer revocation.
  if (!restoring && revocation_expires_ != 0 && now >= revocation_expires_)
    return make_coded_error(kRevocationStale, "the newest revocation statement (version " +
                                                  std::to_string(revocation_version_) +
                                                  ") has expired; activations wait for a newer one");
  return rec;
}

Result<std::vector<std::string>> AnchorRegistry::mark_active(const std::string& digest, int32_t pinned_blocks) {
  std::lock_guard lock(mu_);
  auto it = anchors_.find(digest);
  if (it == anchors_.end()) return make_coded_error(kNotFound, "no anchor " + digest + " is registered");
  const uint64_t now = config_.now();
  std::vector<std::string> superseded;
  for (auto& [d, rec] : anchors_)
    if (d != digest && rec.state == AnchorState::kActive && rec.payload.lineage == it->second.payload.lineage &&
        rec.payload.version < it->second.payload.version) {
      rec.state = AnchorState::kInactive;
      rec.pinned_blocks = 0;
      rec.state_changed_at = now;
      superseded.push_back(d);
    }
  it->second.state = AnchorState::kActive;
  it->second.pinned_blocks = pinned_blocks;
  it->second.activated_at = it->second.state_changed_at = now;
  if (Status st = persist_locked(); !st.ok()) return st.error();
  return superseded;
}

Status AnchorRegistry::mark_inactive(const std::string& digest) {
  std::lock_guard lock(mu_);
  auto it = anchors_.find(digest);
  if (it == anchors_.end()) return make_coded_error(kNotFound, "no anchor " + digest + " is registered");
  if (it->second.state != AnchorState::kActive)
    return make_coded_error("anchor_not_active", "anchor " + digest + " is " + anchor_state_name(it->second.state) +
                                                     ", not active");
  it->second.state = AnchorState::kInactive;
  it->second.pinned_blocks = 0;
  it->second.state_changed_at = config_.now();
  return persist_locked();
}

void AnchorRegistry::note_request(const std::string& digest) {
  std::lock_guard lock(mu_);
  if (auto it = anchors_.find(digest); it != anchors_.end()) ++it->second.requests_served;
}

std::vector<std::string> AnchorRegistry::revoke_unsupported_locked(uint64_t now) {
  std::vector<std::string> out;
  for (auto& [digest, rec] : anchors_) {
    if (rec.state == AnchorState::kRevoked || rec.state == AnchorState::kExpired) continue;
    bool revoked = revoked_digests_.count(digest) || revoked_lineages_.count(rec.payload.lineage);
    if (!revoked) {
      auto again = verify_anchor_envelope(rec.envelope_json, verify_context_locked(now));
      revoked = !again.ok() && again.error().code != anchor_codes::kExpired;
    }
    if (revoked) {
      rec.state = AnchorState::kRevoked;
      rec.pinned_blocks = 0;
      rec.state_changed_at = now;
      out.push_back(digest);
    }
  }
  return out;
}

Result<RevocationOutcome> AnchorRegistry::apply_revocation(std::string_view envelope_json) {
  std::lock_guard lock(mu_);
  const uint64_t now = config_.now();
  auto s = verify_revocation_envelope(envelope_json, root_, now, revoked_keyids_);
  if (!s.ok()) return s.error();
  if (s->version <= revocation_version_)
    return make_coded_error(anchor_codes::kRollback, "revocation statement version " + std::to_string(s->version) +
                                                         " is not newer than " + std::to_string(revocation_version_));
  revocation_version_ = s->version;
  revocation_expires_ = s->expires;
  revoked_digests_.insert(s->digests.begin(), s->digests.end());
  revoked_lineages_.insert(s->lineages.begin(), s->lineages.end());
  revoked_keyids_.insert(s->keyids.begin(), s->keyids.end());
  RevocationOutcome out;
  out.version = s->version;
  // A revoked key no longer counts: anchors that fall below the threshold without it are revoked too.
  out.revoked = revoke_unsupported_locked(now);
  if (Status st = persist_locked(); !st.ok()) return st.error();
  return out;
}

Result<RevocationOutcome> AnchorRegistry::rotate_root(std::string_view envelope_json) {
  std::lock_guard lock(mu_);
  const uint64_t now = config_.now();
  auto next = verify_root_rotation(envelope_json, root_, now, revoked_keyids_);
  if (!next.ok()) return next.error();
  const TrustRoot previous = root_;
  const auto previous_anchors = anchors_;
  root_ = std::move(*next);
  RevocationOutcome out;
  out.version = root_.version;
  out.revoked = revoke_unsupported_locked(now);  // anchors whose signers the new root drops
  if (Status st = persist_locked(); !st.ok()) {
    root_ = previous;
    anchors_ = previous_anchors;
    return st.error();
  }
  return out;
}

std::vector<std::string> AnchorRegistry::expire_due() {
  std::lock_guard lock(mu_);
  const uint64_t now = config_.now();
  std::vector<std::string> out;
  for (auto& [digest, rec] : anchors_)
    if ((rec.state == AnchorState::kActive || rec.state == AnchorState::kVerified ||
         rec.state == AnchorState::kInactive) &&
        now >= rec.payload.expires) {
      if (rec.state == AnchorState::kActive) out.push_back(digest);
      rec.state = AnchorState::kExpired;
      rec.state_changed_at = now;
    }
  if (!out.empty()) (void)persist_locked();  // best effort: expiry is re-derived from the envelopes at a restart
  return out;
}

Result<AnchorRecord> AnchorRegistry::resolve_for_request(const std::string& digest, const std::string& tenant) {
  std::lock_guard lock(mu_);
  auto it = anchors_.find(digest);
  if (it == anchors_.end() || it->second.state != AnchorState::kActive) return not_found(digest);
  if (it->second.payload.scope != "*" && it->second.payload.scope != tenant) return not_found(digest);
  return it->second;
}

std::vector<AnchorRecord> AnchorRegistry::list() const {
  std::lock_guard lock(mu_);
  std::vector<AnchorRecord> out;
  for (const auto& [d, rec] : anchors_) out.push_back(rec);
  return out;
}

std::optional<AnchorRecord> AnchorRegistry::get(const std::string& digest) const {
  std::lock_guard lock(mu_);
  auto it = anchors_.find(digest);
  if (it == anchors_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> AnchorRegistry::active_digests() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [d, rec] : anchors_)
    if (rec.state == AnchorState::kActive) out.push_back(d);
  return out;
}

uint64_t AnchorRegistry::root_version() const {
  std::lock_guard lock(mu_);
  return root_.version;
}

std::map<AnchorState, int64_t> AnchorRegistry::count_by_state() const {
  std::lock_guard lock(mu_);
  std::map<AnchorState, int64_t> out;
  for (AnchorState s : {AnchorState::kVerified, AnchorState::kActive, AnchorState::kRevoked, AnchorState::kExpired,
                        AnchorState::kInactive})
    out[s] = 0;
  for (const auto& [d, rec] : anchors_) ++out[rec.state];
  return out;
}

}  // namespace pagoda
