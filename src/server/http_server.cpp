#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "api/openai_request.h"
#include "api/anthropic_messages.h"
#include "api/openai_response.h"
#include "api/render.h"
#include "api/responses_api.h"
#include "server/connection_probe.h"
#include "server/http_errors.h"
#include "server/prebuffered_socket_stream.h"
#include "server/tenant_metrics.h"
#include "util/json_depth.h"

namespace pagoda {
namespace {

using json = nlohmann::json;
using SteadyTime = std::chrono::steady_clock::time_point;

// Deeper bodies are refused before anything walks them recursively (real requests nest a few levels; a JSON
// Schema a few dozen).
constexpr size_t kMaxBodyNesting = 256;

double seconds_between(SteadyTime a, SteadyTime b) { return std::chrono::duration<double>(b - a).count(); }

const char* default_message(int status) {
  switch (status) {
    case 400:
      return "malformed HTTP request";
    case 404:
      return "no such endpoint";
    case 405:
      return "method not allowed on this endpoint";
    case 413:
      return "the request body is larger than the server's limit";
    case 414:
      return "the request URI is too long";
    default:
      return status >= 500 ? "internal server error" : "request failed";
  }
}

std::string sse_data(const json& value) { return "data: " + to_wire(value) + "\n\n"; }

// An error answered in OpenAI's shape, rewritten in Anthropic's (the message kept; the param is in it).
void to_anthropic_error(httplib::Response& res) {
  if (res.status < 400) return;
  const json body = json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object() ||
      !body["error"].contains("message") || !body["error"]["message"].is_string())
    return;
  res.set_content(to_wire(anthropic_error_body(res.status, body["error"]["message"].get<std::string>())),
                  "application/json");
}

// Per-request latency bookkeeping for the histograms.
struct RequestClock {
  SteadyTime arrival;
  bool first_token_seen = false;
  std::vector<SteadyTime> last_token;  // per choice
  std::vector<bool> has_token;

  RequestClock(SteadyTime t0, int32_t n) : arrival(t0), last_token(n), has_token(n, false) {}

  void on_token(const StreamEvent& ev, ServerMetrics& m) {
    const SteadyTime now = std::chrono::steady_clock::now();
    if (!first_token_seen) {
      first_token_seen = true;
      m.time_to_first_token.observe(seconds_between(arrival, now));
    }
    const size_t i = static_cast<size_t>(ev.index);
    if (i >= last_token.size()) return;
    if (has_token[i]) m.inter_token_latency.observe(seconds_between(last_token[i], now));
    has_token[i] = true;
    last_token[i] = now;
  }
};

// How a request ended, for the counters: the worst of its choices' reasons.
struct Outcome {
  bool error = false, abort = false, length = false;
  void on_finish(FinishReason r) {
    error |= r == FinishReason::kError;
    abort |= r == FinishReason::kCancelled || r == FinishReason::kAnchorRevoked;
    length |= r == FinishReason::kLength;
  }
  void record(ServerMetrics& m, SteadyTime arrival) const {
    if (error) {
      m.finished_error.fetch_add(1, std::memory_order_relaxed);
    } else if (abort) {
      m.finished_abort.fetch_add(1, std::memory_order_relaxed);
    } else {
      (length ? m.finished_length : m.finished_stop).fetch_add(1, std::memory_order_relaxed);
      m.e2e_request_latency.observe(seconds_between(arrival, std::chrono::steady_clock::now()));
    }
  }
};

}  // namespace

HttpServer::HttpServer(ServerConfig config)
    : config_(std::move(config)), rate_limiter_(config_.api_keys.tenant_limits()) {
  metrics_ctx_.model_name = config_.served_model_name;
  metrics_ctx_.vllm_names = config_.metrics_vllm_names;
}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  // httplib routes and answers; connections are accepted and requests read by the connection front, which hands
  // a worker a connection only with a whole request in memory (server/connection_front.h).
  http_ = std::make_unique<FramedHttpServer>();
  http_->set_payload_max_length(config_.max_body_bytes);

  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_.load()) return send_error(res, 503, "the model is loading");
    if (draining_.load()) {
      res.set_header("Connection", "close");
      return send_error(res, 503, "the server is shutting down");
    }
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { handle_metrics(res); });
  http_->Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    std::string tenant;
    if (authorize(req, res, &tenant)) handle_models(res);
  });
  http_->Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kCompletions);
  });
  http_->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kChat);
  });
  http_->Post("/v1/completions/render", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kCompletionsRender);
  });
  http_->Post("/v1/chat/completions/render", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kChatRender);
  });
  http_->Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kResponses);
  });
  // Anthropic's clients read its own error shape: every error of these endpoints is rewritten into it.
  http_->Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kMessages);
    to_anthropic_error(res);
  });
  http_->Post("/v1/messages/count_tokens", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(req, res, Api::kMessagesCountTokens);
    to_anthropic_error(res);
  });
  http_->Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    std::string tenant;
    if (authorize(req, res, &tenant)) handle_apply_template(req, res);
  });
  register_anchor_routes();
  // Statuses the library sets itself (unknown path, body too large, unparsable request) get the JSON error shape.
  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) send_error(res, res.status, default_message(res.status));
  });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal server error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
    send_error(res, 500, what);
  });

  // httplib streams a chunked response only while its server "is running", which only its own accept loop sets.
  // So that loop runs, on a listening socket nobody can reach: bound to a loopback port, whose descriptor is then
  // replaced (dup2) by a listening Unix socket with an anonymous (autobound) name; every real connection comes
  // through the front.
  http_->new_task_queue = [] { return new httplib::ThreadPool(1); };
  http_->set_socket_options([this](socket_t sock) { idle_listener_fd_ = sock; });
  if (http_->bind_to_any_port("127.0.0.1") < 0 || idle_listener_fd_ < 0)
    return make_error("cannot start the HTTP library's accept loop (no loopback port)");
  const int placeholder = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un unix_addr{};
  unix_addr.sun_family = AF_UNIX;
  const bool replaced = placeholder >= 0 &&
                        ::bind(placeholder, reinterpret_cast<sockaddr*>(&unix_addr), sizeof(sa_family_t)) == 0 &&
                        ::listen(placeholder, 1) == 0 && ::dup2(placeholder, idle_listener_fd_) >= 0;
  if (placeholder >= 0) ::close(placeholder);
  if (!replaced) return make_error("cannot start the HTTP library's accept loop (placeholder socket)");
  library_thread_ = std::thread([this] { http_->listen_after_bind(); });
  while (!http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  workers_ = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(std::max(config_.http_threads, 8)));
  FrontConfig front;
  front.max_connections = config_.max_connections;
  front.head_timeout = config_.head_timeout;
  front.body_timeout = config_.body_timeout;
  front.idle_timeout = config_.idle_timeout;
  front.limits.max_body_bytes = config_.max_body_bytes;
  front_ = std::make_unique<ConnectionFront>(front, [this](int fd, std::string bytes, size_t size, bool cont) {
    // std::function needs a copyable callable: the bytes move into a shared buffer the task owns.
    auto buffer = std::make_shared<std::string>(std::move(bytes));
    workers_->enqueue([this, fd, buffer, size, cont] { serve_connection(fd, std::move(*buffer), size, cont); });
  });
  if (Status s = front_->start(config_.host, config_.port); !s.ok()) return s;
  port_ = front_->port();
  return Status::success();
}

void HttpServer::serve_connection(int fd, std::string bytes, size_t request_size, bool continue_sent) {
  PrebufferedSocketStream stream(fd, std::move(bytes), std::chrono::seconds(config_.write_timeout_s), continue_sent);
  bool connection_closed = false;
  const bool close_after = draining_.load();
  const bool ok = http_->serve(stream, close_after, connection_closed);
  // The connection goes on only when the library read exactly the request the front framed (any disagreement
  // about where a request ends closes it) and the answer went out whole.
  if (!ok || connection_closed || close_after || stream.write_failed() || stream.consumed() != request_size) {
    ::close(fd);
    return;
  }
  front_->resume(fd, stream.unconsumed());
}

void HttpServer::set_ready(const ServingContext& ctx) {
  ctx_ = ctx;
  capacity_ = static_cast<int64_t>(ctx.engine->config().max_num_seqs) + config_.max_queue;
  metrics_ctx_.block_size = ctx.engine->pool_shape().block_size;
  metrics_ctx_.num_blocks = ctx.engine->pool_shape().num_blocks;
  ready_.store(true, std::memory_order_release);
}

// New connections are refused (the front closes its listener); connections already open get 503 for new
// requests, and requests in flight go on.
void HttpServer::begin_drain() {
  draining_.store(true);
  if (front_) front_->stop_accepting();
}

bool HttpServer::wait_idle(std::chrono::steady_clock::time_point deadline) {
  while (in_flight_.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void HttpServer::cancel_all() {
  std::lock_guard lock(live_mu_);
  for (const auto& s : live_) s->cancel();
}

void HttpServer::stop() {
  if (front_) front_->stop();
  if (workers_) workers_->shutdown();  // waits for the requests in flight (cancel_all ends them sooner)
  workers_.reset();
  front_.reset();
  if (http_) http_->stop();
  if (library_thread_.joinable()) library_thread_.join();
}

void HttpServer::track(const std::shared_ptr<RequestStream>& s) {
  std::lock_guard lock(live_mu_);
  live_.insert(s);
}

void HttpServer::untrack(const std::shared_ptr<RequestStream>& s) {
  std::lock_guard lock(live_mu_);
  live_.erase(s);
}

std::string HttpServer::next_request_id(bool chat) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(request_counter_.fetch_add(1) + 1));
  return buf;
}

bool HttpServer::authorize(const httplib::Request& req, httplib::Response& res, std::string* tenant) const {
  tenant->clear();
  if (config_.api_keys.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  // Anthropic's clients send the key as x-api-key; either header works on every endpoint.
  const std::string x_api_key = req.get_header_value("x-api-key");
  const bool bearer = header.size() > prefix.size() && header.compare(0, prefix.size(), prefix) == 0;
  if (!bearer && x_api_key.empty()) {
    send_error(res, 401, "missing API key: send 'Authorization: Bearer <key>' or 'x-api-key: <key>'", {},
               "invalid_api_key");
    return false;
  }
  auto t = config_.api_keys.tenant_of(bearer ? std::string_view(header).substr(prefix.size())
                                             : std::string_view(x_api_key));
  if (!t) {
    send_error(res, 401, "incorrect API key", {}, "invalid_api_key");
    return false;
  }
  *tenant = *t;
  return true;
}

void HttpServer::handle_models(httplib::Response& res) const {
  if (!ready_.load(std::memory_order_acquire)) return send_error(res, 503, "the model is loading");
  json model = {{"id", config_.served_model_name},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "pagoda"},
                {"max_model_len", ctx_.max_model_len}};
  res.set_content(to_wire(json{{"object", "list"}, {"data", json::array({model})}}), "application/json");
}

void HttpServer::handle_apply_template(const httplib::Request& req, httplib::Response& res) const {
  if (!ready_.load(std::memory_order_acquire)) return send_error(res, 503, "the model is loading");
  nlohmann::ordered_json body;
  try {
    body = nlohmann::ordered_json::parse(req.body);
  } catch (const nlohmann::ordered_json::exception& e) {
    return send_error(res, 400, std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) return send_error(res, 400, "the request body must be a JSON object");
  if (json_nests_deeper_than(body, kMaxBodyNesting))
    return send_error(res, 400, "the request body nests deeper than " + std::to_string(kMaxBodyNesting) + " levels");
  ChatInput input;
  for (const auto& [key, value] : body.items()) {
    if (key == "messages") {
      input.messages = value;
    } else if (key == "tools") {
      input.tools = value;
    } else if (key == "add_generation_prompt") {
      if (!value.is_boolean() && !value.is_null())
        return send_error(res, 400, "'add_generation_prompt' must be true or false", "add_generation_prompt");
      if (value.is_boolean()) input.add_generation_prompt = value.get<bool>();
    } else if (key == "chat_template_kwargs") {
      if (!value.is_null()) input.kwargs = value;
    } else if (key == "model") {
      if (!value.is_string() && !value.is_null()) return send_error(res, 400, "'model' must be a string", "model");
      if (value.is_string() && value.get<std::string>() != config_.served_model_name)
        return send_error(res, 404, "The model '" + value.get<std::string>() + "' does not exist; this server serves '" +
                                        config_.served_model_name + "'",
                          "model", "model_not_found");
    } else if (!value.is_null()) {
      return send_error(res, 400, "unsupported field '" + key + "': /apply-template takes messages, tools, " +
                                      "add_generation_prompt and chat_template_kwargs", key);
    }
  }
  if (!body.contains("messages")) return send_error(res, 400, "'messages' is required", "messages");
  static const ChatPrompt kDefaultPrompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  auto text = (ctx_.chat_template ? *ctx_.chat_template : kDefaultPrompt).render(input);
  if (!text.ok()) return send_error(res, 400, text.error().message, text.error().param);
  res.set_content(to_wire(json{{"prompt", *text}}), "application/json");
}

void HttpServer::handle_metrics(httplib::Response& res) const {
  EngineStats stats;
  if (ready_.load(std::memory_order_acquire)) stats = ctx_.engine->stats();  // the last published snapshot
  std::string text = render_metrics(metrics_, stats, metrics_ctx_);
  if (config_.kv_events) {
    const std::string model = "model_name=\"" + config_.served_model_name + "\"";
    text += "# HELP pagoda:kv_events_published_batches_total KV-cache event batches published (one per engine step "
            "that changed the prefix cache).\n# TYPE pagoda:kv_events_published_batches_total counter\n"
            "pagoda:kv_events_published_batches_total{" + model + "} " +
            std::to_string(config_.kv_events->published_batches()) + "\n";
    text += "# HELP pagoda:kv_events_dropped_batches_total KV-cache event batches dropped because the publisher's "
            "queue was full.\n# TYPE pagoda:kv_events_dropped_batches_total counter\n"
            "pagoda:kv_events_dropped_batches_total{" + model + "} " +
            std::to_string(config_.kv_events->dropped_batches()) + "\n";
  }
  if (front_) {
    const FrontStats& f = front_->stats();
    const std::string model = "model_name=\"" + config_.served_model_name + "\"";
    auto family = [&](const char* name, const char* type, const char* help, int64_t value) {
      text += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + "{" +
              model + "} " + std::to_string(value) + "\n";
    };
    family("pagoda:http_connections_waiting", "gauge",
           "Connections waiting for a whole request (reading, idle between requests, or closing); no thread each.",
           f.waiting.load(std::memory_order_relaxed));
    family("pagoda:http_connections_timed_out_total", "counter",
           "Connections closed because a request's head or body, or the next request, did not arrive in time.",
           f.timed_out.load(std::memory_order_relaxed));
    family("pagoda:http_connections_evicted_total", "counter",
           "Connections closed to make room for new ones (--max-connections), the longest waiting first.",
           f.evicted.load(std::memory_order_relaxed));
    family("pagoda:http_requests_refused_total", "counter",
           "Requests answered 400, 413 or 431 before any handler: malformed framing, or over the size limits.",
           f.refused_requests.load(std::memory_order_relaxed));
  }
  if (ready_.load(std::memory_order_acquire))
    text += render_tenant_metrics(ctx_.engine->tenant_usage(), rate_limiter_, config_.served_model_name);
  if (ready_.load(std::memory_order_acquire) && ctx_.anchors) text += ctx_.anchors->render_metrics(config_.served_model_name);
  res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::handle_generate(const httplib::Request& req, httplib::Response& res, Api api) {
  const bool chat = api != Api::kCompletions && api != Api::kCompletionsRender;
  const SteadyTime arrival = std::chrono::steady_clock::now();
  std::string tenant;
  if (!authorize(req, res, &tenant)) return;
  if (!ready_.load(std::memory_order_acquire)) return send_error(res, 503, "the model is loading");
  if (draining_.load()) {
    res.set_header("Connection", "close");
    return send_error(res, 503, "the server is shutting down");
  }
  // Parsed once, keeping the key order a template's tojson shows and a json_schema's properties follow; the field
  // readers take a sorted copy of the tree (no second parse of the text).
  nlohmann::ordered_json ordered_body;
  try {
    ordered_body = nlohmann::ordered_json::parse(req.body);
  } catch (const nlohmann::ordered_json::exception& e) {  // syntax errors, and numbers out of double's range
    return send_error(res, 400, std::string("the request body is not valid JSON: ") + e.what());
  }
  if (json_nests_deeper_than(ordered_body, kMaxBodyNesting))
    return send_error(res, 400, "the request body nests deeper than " + std::to_string(kMaxBodyNesting) + " levels");
  const std::string id = next_request_id(chat);
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  // The Responses and Messages APIs: the body becomes a chat body; the dialect writes the replies.
  std::unique_ptr<ChatDialect> dialect;
  if (api == Api::kResponses || api == Api::kMessages || api == Api::kMessagesCountTokens) {
    const DialectContext dctx{id, config_.served_model_name, created};
    auto translated = api == Api::kResponses
                          ? translate_responses_request(ordered_body, dctx)
                          : translate_anthropic_request(ordered_body, dctx, api == Api::kMessagesCountTokens);
    if (!translated.ok()) return send_error(res, 400, translated.error().message, translated.error().param);
    ordered_body = std::move(translated->chat_body);
    dialect = std::move(translated->dialect);
  }
  const json body(ordered_body);
  if (body.is_object() && body.contains("model") && body["model"].is_string() &&
      body["model"].get<std::string>() != config_.served_model_name)
    return send_error(res, 404, "The model '" + body["model"].get<std::string>() + "' does not exist; this server serves '" +
                                    config_.served_model_name + "'",
                      "model", "model_not_found");
  ApiLimits limits{ctx_.max_model_len, ctx_.chat_template, -1};
  const Tokenizer& tokenizer = ctx_.model->tokenizer();
  // An anchor is resolved first (its scope against the key's tenant; unknown, inactive and out-of-scope digests
  // get the same answer), so that the prompt is parsed knowing how many tokens precede it.
  auto anchor_digest = peek_anchor_field(body);
  if (!anchor_digest.ok()) return send_error(res, 400, anchor_digest.error().message, "anchor");
  std::optional<AnchorRecord> anchor;
  if (!anchor_digest->empty()) {
    if (!ctx_.anchors)
      return send_error(res, 400, "no active anchor " + *anchor_digest + " is available to this request", "anchor",
                        "anchor_not_found");
    auto rec = ctx_.anchors->resolve_for_request(*anchor_digest, tenant);
    if (!rec.ok()) return send_error(res, 400, rec.error().message, "anchor", "anchor_not_found");
    anchor = std::move(*rec);
    limits.anchor_tokens = static_cast<int64_t>(anchor->tokens.size());
  }
  // count_tokens counts whatever the length (the context limit is the generation's concern).
  if (api == Api::kMessagesCountTokens) limits.max_model_len = int64_t{1} << 40;
  // Generation must fit the KV pool: refused now, naming the pool, rather than failing mid-stream or stopping short.
  if (api != Api::kMessagesCountTokens && api != Api::kCompletionsRender && api != Api::kChatRender) {
    const KvPoolShape& shape = ctx_.engine->pool_shape();
    limits.kv_pool_blocks = shape.num_blocks;
    limits.kv_block_size = shape.block_size;
    limits.kv_pool_tokens = static_cast<int64_t>(shape.num_blocks) * shape.block_size;
    if (auto t = ctx_.engine->tenant_limits(tenant); t && t->max_kv_blocks > 0 && t->max_kv_blocks < shape.num_blocks) {
      limits.kv_pool_blocks = t->max_kv_blocks;
      limits.kv_pool_tokens = static_cast<int64_t>(t->max_kv_blocks) * shape.block_size;
      limits.kv_limit_tenant = tenant;
    }
  }
  auto parsed = chat ? parse_chat_request(body, tokenizer, limits, &ordered_body)
                     : parse_completion_request(body, tokenizer, limits, &ordered_body);
  if (!parsed.ok()) {
    if (!dialect) return send_error(res, 400, parsed.error().message, parsed.error().param);
    const std::string param = dialect->param_name(parsed.error().param);
    return send_error(res, 400, rename_in_message(parsed.error().message, parsed.error().param, param), param);
  }
  OpenAiRequest& request = *parsed;
  if (api == Api::kCompletionsRender || api == Api::kChatRender) {  // tokenized, not run
    if (anchor) {  // the sequence starts with the anchor's tokens
      for (auto& p : request.prompts) p.insert(p.begin(), anchor->tokens.begin(), anchor->tokens.end());
      request.gen.prompt.insert(request.gen.prompt.begin(), anchor->tokens.begin(), anchor->tokens.end());
    }
    res.set_content(to_wire(render_json(request, id, config_.served_model_name)), "application/json");
    return;
  }
  if (api == Api::kMessagesCountTokens) {
    const int64_t n = static_cast<int64_t>(request.gen.prompt.size()) + limits.anchor_tokens * (limits.anchor_tokens > 0);
    res.set_content(to_wire(json{{"input_tokens", n}}), "application/json");
    return;
  }

  // The tenant's requests per minute (rpm in the API keys file): refused before anything is queued.
  if (auto wait = rate_limiter_.admit(tenant, std::chrono::steady_clock::now())) {
    res.set_header("Retry-After", std::to_string((wait->count() + 999) / 1000));
    return send_error(res, 429, "tenant '" + tenant + "' has used its " +
                                    std::to_string(config_.api_keys.tenant_limits().at(tenant).requests_per_minute) +
                                    " requests per minute (rpm); retry after the Retry-After seconds",
                      {}, "tenant_rate_limited");
  }
  if (in_flight_.fetch_add(1) >= capacity_) {
    in_flight_.fetch_sub(1);
    metrics_.rejected_queue_full.fetch_add(1, std::memory_order_relaxed);
    return send_error(res, 429, "the server's queue is full (" + std::to_string(capacity_) +
                                    " requests in flight); retry later",
                      {}, "queue_full");
  }
  request.gen.id = id;
  request.gen.tenant = tenant;
  // Several prompts (completions) are one engine request each, answered on one stream: n choices per prompt.
  const int32_t n = request.gen.n * static_cast<int32_t>(request.prompts.size());
  const int32_t logprobs = request.gen.logprobs;
  const int64_t anchor_tokens = anchor ? static_cast<int64_t>(anchor->tokens.size()) : 0;
  request.gen.anchor = anchor ? anchor->digest : std::string();
  int64_t prompt_tokens = 0;
  std::vector<GenerationRequest> group;
  for (auto& prompt : request.prompts) {
    prompt_tokens += anchor_tokens + static_cast<int64_t>(prompt.size());
    GenerationRequest one = request.gen;
    one.prompt = std::move(prompt);
    group.push_back(std::move(one));
  }
  auto submitted = ctx_.engine->try_submit_group(std::move(group));
  if (!submitted.ok()) {  // the tenant's max_waiting requests are waiting already
    in_flight_.fetch_sub(1);
    res.set_header("Retry-After", "1");
    return send_error(res, 429, submitted.error().message, {}, "tenant_queue_full");
  }
  auto stream = std::move(*submitted);
  if (anchor) ctx_.anchors->count_request(anchor->digest);
  track(stream);
  metrics_.prompt_tokens.fetch_add(prompt_tokens, std::memory_order_relaxed);
  auto builder = std::make_shared<ResponseBuilder>(request.endpoint, id, config_.served_model_name, created, tokenizer,
                                                   n, logprobs);
  builder->tokens_as_ids = request.tokens_as_ids;
  builder->tool_format = request.tool_format;
  builder->parallel_tool_calls = request.parallel_tool_calls;
  builder->tools = request.tools;
  if (anchor) builder->anchor_tokens = anchor_tokens * static_cast<int64_t>(request.prompts.size());
  builder->include_usage_null = request.stream && request.include_usage;
  if (request.stream && request.continuous_usage) builder->continuous_usage_prompt_tokens = prompt_tokens;

  if (!request.stream) {
    RequestClock clock(arrival, n);
    Outcome outcome;
    std::string error;
    bool produced = false;
    StreamEvent ev;
    // Nothing is written until the end, so a client that went away is noticed by looking at its socket once a
    // heartbeat (a poll, no read); the request is then cancelled and its KV blocks freed.
    std::optional<int> client_fd;
    bool looked_up = false, client_gone = false;
    SteadyTime next_probe = arrival + config_.heartbeat;
    for (;;) {
      const RequestStream::WaitResult wait = stream->next_for(&ev, config_.heartbeat);
      if (wait == RequestStream::WaitResult::kEnd) break;
      if (const SteadyTime now = std::chrono::steady_clock::now(); !client_gone && now >= next_probe) {
        next_probe = now + config_.heartbeat;
        if (!looked_up) {
          client_fd = find_connection_socket(req.remote_addr, req.remote_port, req.local_port);
          looked_up = true;
        }
        if (client_fd && peer_has_closed(*client_fd)) {
          client_gone = true;
          stream->cancel();
        }
      }
      if (wait == RequestStream::WaitResult::kTimeout) continue;
      if (ev.kind == StreamEvent::Kind::kToken) {
        clock.on_token(ev, metrics_);
        produced = true;
      } else {
        outcome.on_finish(ev.finish);
        if (ev.finish == FinishReason::kError && error.empty()) error = ev.error;
      }
      builder->add(ev);
    }
    outcome.record(metrics_, arrival);
    untrack(stream);
    in_flight_.fetch_sub(1);
    // An error before any token is the engine refusing the request (it can never fit the KV pool, say).
    if (!error.empty()) return send_error(res, produced ? 500 : 400, error);
    const json response = builder->final_response(prompt_tokens);
    res.set_content(to_wire(dialect ? dialect->response(response) : response), "application/json");
    return;
  }

  struct StreamState {
    std::shared_ptr<RequestStream> stream;
    std::shared_ptr<ResponseBuilder> builder;
    RequestClock clock;
    Outcome outcome;
    bool include_usage;
    int64_t prompt_tokens;
    std::unique_ptr<ChatDialect> dialect;  // the Responses / Messages APIs: their events instead of chat chunks
    bool opened = false;
    bool dialect_failed = false;  // an error event ended the dialect's stream
  };
  auto state = std::make_shared<StreamState>(StreamState{stream, builder, RequestClock(arrival, n), Outcome{},
                                                         request.include_usage, prompt_tokens, std::move(dialect)});
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, state](size_t, httplib::DataSink& sink) -> bool {
        std::string opening;
        if (state->dialect && !state->opened) opening = state->dialect->stream_open(state->prompt_tokens);
        state->opened = true;
        if (!opening.empty() && !sink.write(opening.data(), opening.size())) return false;
        StreamEvent ev;
        switch (state->stream->next_for(&ev, config_.heartbeat)) {
          case RequestStream::WaitResult::kTimeout: {
            static const char kHeartbeat[] = ": keep-alive\n\n";  // an SSE comment: clients skip it
            return sink.write(kHeartbeat, sizeof kHeartbeat - 1);
          }
          case RequestStream::WaitResult::kEnd: {
            std::string tail;
            if (state->dialect) {
              if (!state->dialect_failed)
                tail = state->dialect->stream_close(state->prompt_tokens, state->builder->completion_tokens(),
                                                    state->builder->cached_prompt_tokens());
            } else {
              if (state->include_usage) tail += sse_data(state->builder->usage_chunk(state->prompt_tokens));
              tail += "data: [DONE]\n\n";
            }
            if (!sink.write(tail.data(), tail.size())) return false;
            sink.done();
            return true;
          }
          case RequestStream::WaitResult::kEvent:
            break;
        }
        std::string out;
        if (ev.kind == StreamEvent::Kind::kToken) {
          state->clock.on_token(ev, metrics_);
        } else {
          state->outcome.on_finish(ev.finish);
          if (ev.finish == FinishReason::kError) {
            if (!state->dialect) {
              out += sse_data(error_body(500, ev.error));
            } else if (!state->dialect_failed) {
              out += state->dialect->stream_error(ev.error);
              state->dialect_failed = true;
            }
          }
        }
        for (const json& chunk : state->builder->chunks_for(ev))
          out += state->dialect ? state->dialect->stream_chunk(chunk) : sse_data(chunk);
        return out.empty() || sink.write(out.data(), out.size());
      },
      [this, state](bool) {
        // Runs when the response ends for any reason: a client that went away leaves the request unfinished.
        if (!state->stream->finished()) {
          state->stream->cancel();
          state->outcome.abort = true;
        }
        state->outcome.record(metrics_, state->clock.arrival);
        untrack(state->stream);
        in_flight_.fetch_sub(1);
      });
}

}  // namespace pagoda
