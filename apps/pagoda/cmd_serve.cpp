// pagoda serve MODEL.gguf [--host 127.0.0.1] [--port 8000] [--api-key KEY | --api-keys-file FILE]
//                         [--served-model-name NAME] [--max-queue N] [--metrics-vllm-names] [--kv-events-config JSON]
//                         [--chat-template NAME | --chat-template-file F] [--chat-template-kwargs JSON]
//                         [--shutdown-timeout S] [--request-head-timeout S] [--request-body-timeout S]
//                         [--idle-connection-timeout S] [--max-connections N] [engine flags]
//                         [--anchor-trust-root ROOT.json [--anchor-state-dir DIR] [--anchor FILE]...
//                          [--admin-api-key KEY] [--anchor-max-tokens N] [--anchor-max-pinned-frac F]]
// The OpenAI-compatible server. It binds its port first and answers /health with 503 while the model loads.
// SIGINT / SIGTERM: /health turns 503 and new requests are refused; requests in flight get --shutdown-timeout
// seconds to finish, then are aborted (streams end with finish_reason "abort"); exit code 0. A second signal
// aborts at once.
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "chat_template_flags.h"
#include "commands.h"
#include "default_model.h"
#include "engine/engine.h"
#include "engine_flags.h"
#include "model/model.h"
#include "anchor_setup.h"
#include "server/http_server.h"
#include "server/kv_events_publisher.h"

namespace pagoda::cli {
namespace {

struct ServeOptions {
  std::string model_path;
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;
  std::string api_keys_file;
  std::string served_model_name;
  int32_t max_queue = 256;
  // Slow clients (server/connection_front.h): deadlines for a request's head and body, and the connections that
  // may wait for a whole request at once.
  double request_head_timeout_s = 10;
  double request_body_timeout_s = 30;
  double idle_connection_timeout_s = 60;
  int32_t max_connections = 4096;
  ChatTemplateFlags chat_template;
  double shutdown_timeout_s = 30;
  EngineFlags engine;
  // Verified anchors (docs/anchors.md): enabled by a trust root.
  std::string anchor_trust_root;
  std::string anchor_state_dir;
  std::vector<std::string> anchor_files;
  std::string admin_api_key;
  bool metrics_vllm_names = false;
  std::string kv_events_config;
  int32_t anchor_max_tokens = 512;
  double anchor_max_pinned_frac = 0.25;
};

std::atomic<int> g_signals{0};

// SIGINT/SIGTERM are blocked in every thread and taken by one waiter thread with sigwait, so no handler runs in
// the middle of a library call; the main thread polls the count.
void start_signal_waiter(sigset_t set) {
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) == 0) g_signals.fetch_add(1);
    }
  }).detach();
}

int run_serve(const ServeOptions& o) {
  std::signal(SIGPIPE, SIG_IGN);  // a client that went away is a failed write, not a dead server
  // A file-size limit (RLIMIT_FSIZE) reached while saving anchor state is a failed write (EFBIG) that the admin call
  // reports, not a dead server.
  std::signal(SIGXFSZ, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts: all inherit the mask
  start_signal_waiter(set);

  ServerConfig sc;
  sc.host = o.host;
  sc.port = o.port;
  sc.served_model_name = o.served_model_name.empty() ? std::filesystem::path(o.model_path).stem().string()
                                                     : o.served_model_name;
  if (!o.api_keys_file.empty()) {
    auto keys = ApiKeys::load_file(o.api_keys_file);
    if (!keys.ok()) return fail(keys.error().message);
    sc.api_keys = std::move(*keys);
  }
  if (!o.api_key.empty()) sc.api_keys.add(o.api_key, "");
  sc.max_queue = o.max_queue;
  sc.admin_api_key = o.admin_api_key;
  sc.metrics_vllm_names = o.metrics_vllm_names;
  if (o.anchor_trust_root.empty() && (!o.anchor_files.empty() || !o.anchor_state_dir.empty()))
    return fail("--anchor and --anchor-state-dir need --anchor-trust-root");
  sc.http_threads = std::clamp(o.engine.max_num_seqs + o.max_queue + 16, 64, 1024);
  sc.max_connections = static_cast<size_t>(o.max_connections);
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  sc.head_timeout = ms(o.request_head_timeout_s);
  sc.body_timeout = ms(o.request_body_timeout_s);
  sc.idle_timeout = ms(o.idle_connection_timeout_s);
  auto config = engine_config(o.engine, o.model_path);
  if (!config.ok()) return fail(config.error().message);
  config->prefault_kv = true;
  config->tenants = sc.api_keys.tenant_limits();
  config->anchor_max_pinned_frac = o.anchor_max_pinned_frac;
  // KV-cache events for routers: the publisher outlives the engine (declared first, destroyed last).
  std::unique_ptr<KvEventsPublisher> kv_events;
  if (!o.kv_events_config.empty()) {
    auto kc = KvEventsConfig::parse(o.kv_events_config);
    if (!kc.ok()) return fail(kc.error().message);
    if (kc->enable_kv_cache_events) {
      auto pub = KvEventsPublisher::start(*kc);
      if (!pub.ok()) return fail(pub.error().message);
      kv_events = std::move(*pub);
      config->kv_events = [p = kv_events.get()](std::vector<KvCacheEvent>&& events) { p->publish(std::move(events)); };
      sc.kv_events = kv_events.get();
      std::fprintf(stderr, "pagoda: KV-cache events: %s %s%s%s\n", kc->publisher.c_str(), kc->endpoint.c_str(),
                   kc->replay_endpoint.empty() ? "" : ", replay ", kc->replay_endpoint.c_str());
    }
  }

  HttpServer server(sc);
  if (Status st = server.start(); !st.ok()) return fail(st.error().message);
  std::fprintf(stderr, "pagoda: listening on http://%s:%d (loading %s)\n", o.host.c_str(), server.port(),
               o.model_path.c_str());

  auto model = Model::load(o.model_path);
  if (!model.ok()) {
    server.stop();
    return fail(model.error().message);
  }
  if (Status st = attach_warm_start(o.engine, **model, *config); !st.ok()) {
    server.stop();
    return fail(st.error().message);
  }
  auto engine = Engine::create(**model, *config);
  if (!engine.ok()) {
    server.stop();
    return fail(engine.error().message);
  }
  std::string how;
  auto chat_prompt = chat_prompt_for((*model)->file(), (*model)->tokenizer(), o.chat_template, &how);
  if (!chat_prompt.ok()) {
    server.stop();
    return fail(chat_prompt.error().message);
  }
  ServingContext ctx;
  ctx.model = model->get();
  ctx.engine = engine->get();
  ctx.chat_template = &*chat_prompt;
  ctx.max_model_len = config->max_model_len > 0 ? config->max_model_len : (*model)->hparams().n_ctx_train;
  (*engine)->start();
  std::unique_ptr<AnchorService> anchors;
  if (!o.anchor_trust_root.empty()) {
    if (o.admin_api_key.empty())
      std::fprintf(stderr, "pagoda: no --admin-api-key: the anchor endpoints (/v1/anchors...) are off\n");
    auto started = start_anchor_service(
        AnchorSetup{o.anchor_trust_root, o.anchor_state_dir, o.anchor_files, o.anchor_max_tokens}, o.model_path,
        **model, **engine);
    if (!started.ok()) {
      server.stop();
      (*engine)->stop();
      return fail(started.error().message);
    }
    anchors = std::move(*started);
    ctx.anchors = anchors.get();
  }
  server.set_ready(ctx);
  std::fprintf(stderr, "pagoda: %s\n", (*engine)->describe().c_str());
  std::fprintf(stderr, "pagoda: chat template %s (%s), tool-call format %s\n", chat_prompt->describe().c_str(),
               how.c_str(),
               chat_prompt->tool_format() == ToolCallFormat::kNone ? "generic (the template has none)"
                                                                   : tool_call_format_name(chat_prompt->tool_format()));
  std::fprintf(stderr, "pagoda: serving '%s' on http://%s:%d%s\n", sc.served_model_name.c_str(), o.host.c_str(),
               server.port(), sc.api_keys.empty() ? "" : " (API keys required)");

  while (g_signals.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fprintf(stderr, "pagoda: shutting down: %lld requests in flight, up to %.0f s to finish\n",
               static_cast<long long>(server.in_flight()), o.shutdown_timeout_s);
  server.begin_drain();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_s * 1000));
  bool finished = true;
  while (!server.wait_idle(std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)))) {
    if (g_signals.load() > 1 || std::chrono::steady_clock::now() >= deadline) {
      finished = false;
      break;
    }
  }
  if (!finished) {
    std::fprintf(stderr, "pagoda: aborting %lld requests\n", static_cast<long long>(server.in_flight()));
    server.cancel_all();
    if (!server.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(10)))
      std::fprintf(stderr, "pagoda: %lld connections still open; closing them\n",
                   static_cast<long long>(server.in_flight()));
  }
  server.stop();
  (*engine)->stop();
  std::fprintf(stderr, "pagoda: stopped\n");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, metrics)");
  cmd->add_option("model", opts->model_path, "Model: a GGUF file or a Hugging Face folder (default: SmolLM2, see README)")->check(CLI::ExistingPath);
  cmd->add_option("--host", opts->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", opts->port, "Port (default 8000; 0 picks a free one)")->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", opts->api_key, "Require 'Authorization: Bearer KEY'");
  cmd->add_option("--api-keys-file", opts->api_keys_file,
                  "Keys with tenants, one 'TENANT KEY' per line; a tenant's prefix cache is its own")
      ->check(CLI::ExistingFile);
  cmd->add_option("--served-model-name", opts->served_model_name,
                  "Model name in the API (default: the file name without .gguf)");
  cmd->add_option("--max-queue", opts->max_queue,
                  "Requests that may wait beyond --max-num-seqs running ones; more get 429 (default 256)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--request-head-timeout", opts->request_head_timeout_s,
                  "Seconds a request's head may take to arrive, from its first byte; then 408 (default 10)")
      ->check(finite_range(0.001, 3600));
  cmd->add_option("--request-body-timeout", opts->request_body_timeout_s,
                  "Seconds a request's body may take to arrive, after its head; then 408 (default 30)")
      ->check(finite_range(0.001, 3600));
  cmd->add_option("--idle-connection-timeout", opts->idle_connection_timeout_s,
                  "Seconds a kept-alive connection may wait for its next request (default 60)")
      ->check(finite_range(0.001, 86400));
  cmd->add_option("--max-connections", opts->max_connections,
                  "Connections that may wait for a whole request at once; beyond, the longest waiting is closed "
                  "(default 4096)")
      ->check(CLI::Range(16, 1 << 20));
  cmd->add_option("--kv-events-config", opts->kv_events_config,
                  "KV-cache events for routers, vLLM's KVEventsConfig as JSON: {\"enable_kv_cache_events\": true, "
                  "\"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\", \"replay_endpoint\", \"buffer_steps\", "
                  "\"hwm\", \"topic\", \"medium\", \"event_form\": \"map\"|\"array\"} (docs/scale-out.md)");
  cmd->add_flag("--metrics-vllm-names", opts->metrics_vllm_names,
               "/metrics also exports the gauges routers read under vLLM's names (vllm:num_requests_waiting, "
               "vllm:num_requests_running, vllm:kv_cache_usage_perc, vllm:cache_config_info)");
  add_chat_template_flags(*cmd, opts->chat_template);
  cmd->add_option("--shutdown-timeout", opts->shutdown_timeout_s,
                  "Seconds in-flight requests get to finish on SIGTERM/SIGINT (default 30)")
      ->check(finite_range(0, 86400));
  cmd->add_option("--anchor-trust-root", opts->anchor_trust_root,
                  "Enable verified anchors: the trust root JSON (keys, roles, thresholds) pinned by the operator")
      ->check(CLI::ExistingFile);
  cmd->add_option("--anchor-state-dir", opts->anchor_state_dir,
                  "Folder for anchor state (root, revocations, lineages, envelopes); survives restarts");
  cmd->add_option("--anchor", opts->anchor_files, "An anchor envelope to verify and activate at start (repeatable)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--admin-api-key", opts->admin_api_key,
                  "Key for the anchor endpoints (/v1/anchors...); without it they answer 404");
  cmd->add_option("--anchor-max-tokens", opts->anchor_max_tokens, "Most tokens an anchor may have, BOS included (default 512)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--anchor-max-pinned-frac", opts->anchor_max_pinned_frac,
                  "Largest share of the KV pool that pinned anchors may hold (default 0.25)")
      ->check(finite_range(0, 1));
  add_engine_flags(*cmd, opts->engine);
  cmd->callback([opts, &action] {
    action = [opts] {
      auto path = resolve_model_path(opts->model_path);  // no MODEL: the default model
      if (!path.ok()) return fail(path.error().message);
      opts->model_path = *path;
      return run_serve(*opts);
    };
  });
}

}  // namespace pagoda::cli
