// The OpenAI-compatible HTTP front end of an Engine: an event-driven connection front reads requests
// (server/connection_front.h), worker threads serve them through cpp-httplib's routing.
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
// (request cancelled) once a write times out. A slow sender holds no thread at all (docs/server.md, "Slow clients").
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
#include "server/tenant_rate_limiter.h"
#include "server/connection_front.h"
#include "server/kv_events_publisher.h"
#include "server/metrics.h"
#include "util/result.h"

namespace httplib {
class ThreadPool;
struct Request;
struct Response;
}  // namespace httplib

namespace pagoda {

class FramedHttpServer;

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (see HttpServer::port())
  std::string served_model_name;
  ApiKeys api_keys;        // empty: no authentication
  int32_t max_queue = 256;  // requests beyond max_num_seqs + max_queue in flight get 429
  size_t max_body_bytes = size_t{4} << 20;
  std::chrono::milliseconds heartbeat{500};  // idle streams send an SSE comment this often
  int write_timeout_s = 10;                  // a client that accepts no bytes for this long is dropped
  int http_threads = 64;                     // worker threads (each request being served holds one)
  size_t max_connections = 4096;             // connections waiting for a whole request, at most (connection_front.h)
  std::chrono::milliseconds head_timeout{10000};  // a request's head must arrive within this of its first byte
  std::chrono::milliseconds body_timeout{30000};  // and its body within this of its head
  std::chrono::milliseconds idle_timeout{60000};  // a kept-alive connection waits this long for its next request
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
  // Step 4: closes every connection still waiting and joins the threads.
  void stop();
  const FrontStats& connection_stats() const { return front_->stats(); }

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
  // A worker serves the whole request at the start of `bytes` on fd, then closes fd or gives it back to the front.
  void serve_connection(int fd, std::string bytes, size_t request_size, bool continue_sent);

  ServerConfig config_;
  std::unique_ptr<FramedHttpServer> http_;
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::unique_ptr<ConnectionFront> front_;
  std::thread library_thread_;  // httplib's own accept loop, on a socket nobody can reach (see start())
  int idle_listener_fd_ = -1;
  int port_ = 0;
  ServingContext ctx_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> request_counter_{0};
  ServerMetrics metrics_;
  MetricsContext metrics_ctx_;
  int64_t capacity_ = 0;  // max_num_seqs + max_queue
  TenantRateLimiter rate_limiter_;  // the API keys file's rpm limits

  std::mutex live_mu_;
  std::set<std::shared_ptr<RequestStream>> live_;  // streams in flight, for cancel_all
};

}  // namespace pagoda
