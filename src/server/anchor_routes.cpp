// The anchor endpoints of `pagoda serve` (see docs/anchors.md): every one needs the admin key.
//   POST /v1/anchors                      register (201)          POST /v1/anchors/revocations  revoke (200)
//   POST /v1/anchors/{digest}/activate    pin (200, 409 full)     POST /v1/anchors/root         rotate the root
//   POST /v1/anchors/{digest}/deactivate  unpin                   GET /v1/anchors[/{digest}]    state
// Refusals are 400 with the OpenAI error shape and "code" naming the reason.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "anchor/anchor_error.h"
#include "api/openai_response.h"
#include "server/http_errors.h"
#include "server/prebuffered_socket_stream.h"
#include "server/http_server.h"

namespace pagoda {

using json = nlohmann::json;

namespace {

json record_json(const AnchorRecord& r) {
  return {{"digest", r.digest},
          {"state", anchor_state_name(r.state)},
          {"lineage", r.payload.lineage},
          {"version", r.payload.version},
          {"kind", r.payload.kind},
          {"scope", r.payload.scope},
          {"tokens", r.tokens.size()},
          {"issued", r.payload.issued},
          {"expires", r.payload.expires},
          {"pinned_blocks", r.pinned_blocks},
          {"requests_served", r.requests_served},
          {"registered_at", r.registered_at},
          {"activated_at", r.activated_at},
          {"state_changed_at", r.state_changed_at}};
}

int status_for(const Error& e) {
  if (e.code == "anchor_not_found") return 404;
  if (e.code == "anchor_pool_full" || e.code == "anchor_not_active") return 409;
  if (e.code == anchor_codes::kStateWriteFailed) return 500;
  return 400;
}

void send_refusal(httplib::Response& res, const Error& e) {
  send_error(res, status_for(e), e.message, {}, e.code.empty() ? nullptr : e.code.c_str());
}

}  // namespace

bool HttpServer::authorize_admin(const httplib::Request& req, httplib::Response& res) const {
  if (config_.admin_api_key.empty() || !ready_.load(std::memory_order_acquire) || !ctx_.anchors) {
    send_error(res, 404, "no such endpoint");
    return false;
  }
  const std::string header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  const bool bearer = header.size() > prefix.size() && header.compare(0, prefix.size(), prefix) == 0;
  const std::string_view key = bearer ? std::string_view(header).substr(prefix.size()) : std::string_view();
  if (bearer && ApiKeys::equal_constant_time(key, config_.admin_api_key)) return true;
  if (bearer && config_.api_keys.tenant_of(key)) {
    send_error(res, 403, "this endpoint needs the admin API key", {}, "admin_key_required");
    return false;
  }
  send_error(res, 401, "missing or incorrect admin API key", {}, "invalid_api_key");
  return false;
}

void HttpServer::register_anchor_routes() {
  http_->Post("/v1/anchors", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    auto rec = ctx_.anchors->register_anchor(req.body);
    if (!rec.ok()) return send_refusal(res, rec.error());
    json out = record_json(*rec);
    res.status = 201;
    res.set_content(to_wire(out), "application/json");
  });
  http_->Post("/v1/anchors/revocations", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    auto out = ctx_.anchors->revoke(req.body);
    if (!out.ok()) return send_refusal(res, out.error());
    res.set_content(to_wire(json{{"version", out->version}, {"revoked", out->revoked}}), "application/json");
  });
  http_->Post("/v1/anchors/root", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    auto out = ctx_.anchors->rotate_root(req.body);
    if (!out.ok()) return send_refusal(res, out.error());
    res.set_content(to_wire(json{{"version", out->version}, {"revoked", out->revoked}}), "application/json");
  });
  http_->Post(R"(/v1/anchors/([0-9a-f]{64})/activate)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    auto active = ctx_.anchors->activate(req.matches[1]);
    if (!active.ok()) return send_refusal(res, active.error());
    res.set_content(to_wire(json{{"digest", active->record.digest},
                                 {"state", "active"},
                                 {"tokens", active->pinned.tokens},
                                 {"blocks", active->pinned.blocks},
                                 {"prefill_ms", active->pinned.prefill_seconds * 1000}}),
                    "application/json");
  });
  http_->Post(R"(/v1/anchors/([0-9a-f]{64})/deactivate)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    if (Status st = ctx_.anchors->deactivate(req.matches[1]); !st.ok()) return send_refusal(res, st.error());
    res.set_content(to_wire(json{{"digest", std::string(req.matches[1])}, {"state", "inactive"}}), "application/json");
  });
  http_->Get("/v1/anchors", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    json data = json::array();
    for (const AnchorRecord& r : ctx_.anchors->registry().list()) data.push_back(record_json(r));
    res.set_content(to_wire(json{{"object", "list"}, {"root_version", ctx_.anchors->registry().root_version()},
                                 {"data", data}}),
                    "application/json");
  });
  http_->Get(R"(/v1/anchors/([0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorize_admin(req, res)) return;
    auto r = ctx_.anchors->registry().get(req.matches[1]);
    if (!r) return send_error(res, 404, "no anchor " + std::string(req.matches[1]) + " is registered", {}, "anchor_not_found");
    res.set_content(to_wire(record_json(*r)), "application/json");
  });
}

}  // namespace pagoda
