#include "server/anchor_service.h"

#include "anchor/ed25519.h"
#include "util/atomic_file.h"

namespace pagoda {

Result<std::unique_ptr<AnchorService>> AnchorService::create(AnchorRegistryConfig config, Engine& engine) {
  auto registry = AnchorRegistry::open(std::move(config));
  if (!registry.ok()) return registry.error();
  return std::unique_ptr<AnchorService>(new AnchorService(std::move(*registry), engine));
}

AnchorService::~AnchorService() {
  {
    std::lock_guard lock(ticker_mu_);
    stopping_ = true;
  }
  ticker_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

Error AnchorService::reject(Error error) {
  std::lock_guard lock(counters_mu_);
  ++rejections_[error.code.empty() ? "other" : error.code];
  return error;
}

Result<AnchorRecord> AnchorService::register_anchor(std::string_view envelope_json) {
  auto r = registry_->register_anchor(envelope_json);
  if (!r.ok()) return reject(r.error());
  return r;
}

Result<ActivatedAnchor> AnchorService::activate(const std::string& digest, bool restoring) {
  auto rec = registry_->prepare_activation(digest, restoring);
  if (!rec.ok()) return reject(rec.error());
  auto pinned = engine_.activate_anchor(digest, rec->tokens).get();
  if (!pinned.ok()) return reject(pinned.error());
  auto superseded = registry_->mark_active(digest, pinned->blocks);
  if (!superseded.ok()) {
    engine_.deactivate_anchor(digest);
    return superseded.error();
  }
  for (const std::string& older : *superseded) engine_.deactivate_anchor(older);
  auto now = registry_->get(digest);
  return ActivatedAnchor{now ? *now : *rec, *pinned};
}

Status AnchorService::deactivate(const std::string& digest) {
  if (Status st = registry_->mark_inactive(digest); !st.ok()) return reject(st.error());
  engine_.deactivate_anchor(digest);
  return Status::success();
}

Result<RevocationOutcome> AnchorService::revoke(std::string_view envelope_json) {
  auto out = registry_->apply_revocation(envelope_json);
  if (!out.ok()) return reject(out.error());
  revoke_in_engine(out->revoked);
  return out;
}

Result<RevocationOutcome> AnchorService::rotate_root(std::string_view envelope_json) {
  auto out = registry_->rotate_root(envelope_json);
  if (!out.ok()) return reject(out.error());
  revoke_in_engine(out->revoked);
  return out;
}

void AnchorService::revoke_in_engine(const std::vector<std::string>& digests) {
  // Revoking a digest the engine does not hold is a no-op; only those that were pinned count.
  for (const std::string& digest : digests) {
    engine_.revoke_anchor(digest);
    revocations_.fetch_add(1, std::memory_order_relaxed);
  }
}

Result<ActivatedAnchor> AnchorService::load_file(const std::string& path) {
  auto text = read_small_file(path, size_t{64} << 10);
  if (!text.ok()) return make_error("--anchor: " + text.error().message);
  auto rec = register_anchor(*text);
  if (!rec.ok())
    return make_coded_error(rec.error().code, "--anchor '" + path + "': " + rec.error().code + ": " + rec.error().message);
  auto active = activate(rec->digest);
  if (!active.ok())
    return make_coded_error(active.error().code,
                            "--anchor '" + path + "': " + active.error().code + ": " + active.error().message);
  return active;
}

Status AnchorService::restore_active() {
  for (const std::string& digest : registry_->active_digests()) {
    auto active = activate(digest, /*restoring=*/true);
    if (!active.ok()) return make_error("restoring active anchor " + digest + ": " + active.error().message);
  }
  return Status::success();
}

void AnchorService::start_expiry_ticker() {
  ticker_ = std::thread([this] {
    std::unique_lock lock(ticker_mu_);
    while (!ticker_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
      revoke_in_engine(registry_->expire_due());  // same effect as a revocation: no later step attends to it
    }
  });
}

Result<AnchorRecord> AnchorService::resolve_for_request(const std::string& digest, const std::string& tenant) {
  auto r = registry_->resolve_for_request(digest, tenant);
  if (!r.ok()) return reject(r.error());
  return r;
}

void AnchorService::count_request(const std::string& digest) {
  registry_->note_request(digest);
  requests_.fetch_add(1, std::memory_order_relaxed);
}

std::string AnchorService::render_metrics(const std::string& model_name) const {
  const std::string label = "model_name=\"" + model_name + "\"";
  std::string out;
  out += "# HELP pagoda:anchors Anchors by lifecycle state.\n# TYPE pagoda:anchors gauge\n";
  int64_t pinned = 0;
  for (const AnchorRecord& r : registry_->list())
    if (r.state == AnchorState::kActive) pinned += r.pinned_blocks;
  for (const auto& [state, n] : registry_->count_by_state())
    out += "pagoda:anchors{" + label + ",state=\"" + anchor_state_name(state) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP pagoda:anchor_pinned_blocks KV blocks pinned by active anchors.\n"
         "# TYPE pagoda:anchor_pinned_blocks gauge\n";
  out += "pagoda:anchor_pinned_blocks{" + label + "} " + std::to_string(pinned) + "\n";
  out += "# HELP pagoda:anchor_requests_total Requests admitted with an anchor.\n"
         "# TYPE pagoda:anchor_requests_total counter\n";
  out += "pagoda:anchor_requests_total{" + label + "} " + std::to_string(requests_.load()) + "\n";
  out += "# HELP pagoda:anchor_rejections_total Refused anchor operations by reason.\n"
         "# TYPE pagoda:anchor_rejections_total counter\n";
  {
    std::lock_guard lock(counters_mu_);
    for (const auto& [code, n] : rejections_)
      out += "pagoda:anchor_rejections_total{" + label + ",code=\"" + code + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP pagoda:anchor_revocations_total Active anchors revoked or expired in the engine.\n"
         "# TYPE pagoda:anchor_revocations_total counter\n";
  out += "pagoda:anchor_revocations_total{" + label + "} " + std::to_string(revocations_.load()) + "\n";
  out += "# HELP pagoda:anchor_signature_verifications_total Ed25519 verifications (never on the token path).\n"
         "# TYPE pagoda:anchor_signature_verifications_total counter\n";
  out += "pagoda:anchor_signature_verifications_total{" + label + "} " +
         std::to_string(ed25519_verification_count()) + "\n";
  return out;
}

}  // namespace pagoda
