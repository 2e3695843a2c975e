// The OpenAI-compatible HTTP front end of an Engine (cpp-httplib, one thread per connection).
//   POST /v1/completions, POST /v1/chat/completions   JSON or Server-Sent Events (stream: true)
//   POST /v1/responses                                OpenAI's Responses API (api/responses_api.h)
//   POST /v1/messages, POST /v1/messages/count_tokens Anthropic's Messages API (api/anthropic_messages.h), with its
//                                                     own error shape; x-api-key works as well as a bearer token
//   POST /v1/completions/render, /v1/chat/completions/render  the token ids a request would prefill, in vLLM's
//                                                     shapes (api/render.h), so a router tokenizes as the replica does
//   GET /v1/models, GET /health (200 once ready, 503 before and while draining), GET /metrics (Prometheus)
// Handler threads never block the engine: they submit requests and read their RequestStream; the engine thread
// only appends to streams. A streaming handler writes each event as it comes and an SSE comment line when idle
// for a heartbeat, so a client that went away is noticed by a failed write and its request cancelled (its KV
// blocks are freed by the next engine step). A slow reader blocks only its own handler thread, and is dropped
// (request cancelled) once a write times out.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "api/chat_prompt.h"
#include "engine/engine.h"
#include "model/model.h"
#include "server/anchor_service.h"
#include "server/api_keys.h"
#include "server/kv_events_publisher.h"
#include "server/metrics.h"
#include "util/result.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace pagoda {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (see HttpServer::port())
  std::string served_model_name;
  ApiKeys api_keys;        // empty: no authentication
  int32_t max_queue = 256;  // requests beyond max_num_seqs + max_queue in flight get 429
  size_t max_body_bytes = size_t{4} << 20;
  std::chrono::milliseconds heartbeat{500};  // idle streams send an SSE comment this often
  int write_timeout_s = 10;                  // a client that accepts no bytes for this long is dropped
  int http_threads = 64;                     // connection threads (each in-flight request holds one)
  std::string admin_api_key;  // guards the anchor endpoints; empty: they answer 404
  bool metrics_vllm_names = false;  // /metrics also exports the router gauges under vLLM's names
  const KvEventsPublisher* kv_events = nullptr;  // its counters go to /metrics; nullptr: no events
};

// What the server serves once the model is loaded.
struct ServingContext {
  const Model* model = nullptr;
  Engine* engine = nullptr;
  const ChatPrompt* chat_template = nullptr;  // how chat messages become the prompt; nullptr: built-in chatml
  int64_t max_model_len = 0;
  AnchorService* anchors = nullptr;  // verified anchors; nullptr when not enabled (--anchor-trust-root)
};

class HttpServer {
 public:
  explicit HttpServer(ServerConfig config);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket (an error names the address) and starts serving on a background thread.
  // Until set_ready(), /health answers 503 and the API endpoints 503.
  Status start();
  int port() const { return port_; }
  void set_ready(const ServingContext& ctx);

  // Graceful shutdown, step 1: the listening socket closes (new connections are refused); requests arriving on
  // connections already open get 503, /health too; requests in flight go on.
  void begin_drain();
  // Step 2: waits until no request is in flight, or the deadline; true when all finished by themselves.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  // Step 3 (after a missed deadline): cancels every request in flight; their streams end with "abort".
  void cancel_all();
  // Step 4: closes the listening socket and joins the server thread.
  void stop();

  int64_t in_flight() const { return in_flight_.load(); }
  const ServerMetrics& metrics() const { return metrics_; }

 private:
  // Which API a generation request speaks: the last three are rewritten as chat requests (api/chat_dialect.h).
  enum class Api { kCompletions, kChat, kResponses, kMessages, kMessagesCountTokens, kCompletionsRender, kChatRender };
  void handle_generate(const httplib::Request& req, httplib::Response& res, Api api);
  void handle_models(httplib::Response& res) const;
  // POST /apply-template (llama-server's): {"messages", "tools"?, "add_generation_prompt"?, "chat_template_kwargs"?}
  // rendered by the chat template with the messages exactly as given: {"prompt": "..."}.
  void handle_apply_template(const httplib::Request& req, httplib::Response& res) const;
  void handle_metrics(httplib::Response& res) const;
  bool authorize(const httplib::Request& req, httplib::Response& res, std::string* tenant) const;
  // The anchor endpoints (anchor_routes.cpp): admin key only; 404 without --admin-api-key or anchors.
  void register_anchor_routes();
  bool authorize_admin(const httplib::Request& req, httplib::Response& res) const;
  void track(const std::shared_ptr<RequestStream>& s);
  void untrack(const std::shared_ptr<RequestStream>& s);
  std::string next_request_id(bool chat);
  void stop_accepting();

  ServerConfig config_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;
  ServingContext ctx_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> accept_stopped_{false};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> request_counter_{0};
  ServerMetrics metrics_;
  MetricsContext metrics_ctx_;
  int64_t capacity_ = 0;  // max_num_seqs + max_queue

  std::mutex live_mu_;
  std::set<std::shared_ptr<RequestStream>> live_;  // streams in flight, for cancel_all
};

}  // namespace pagoda
