// pagoda-localai --addr HOST:PORT (also --addr=HOST:PORT, -a HOST:PORT): pagoda as a LocalAI backend.
// LocalAI starts it with `--addr 127.0.0.1:<port>`, polls Health, then sends LoadModel (docs/localai.md). It
// listens at once and loads the model only in LoadModel (apps/pagoda-localai/model_loader.h); the service is
// src/localai/backend_service.h.
// Environment, as LocalAI's own backends read it:
//   LOCALAI_GRPC_AUTH_TOKEN                every RPC needs "authorization: Bearer <token>" (unset or empty: off)
//   LOCALAI_BACKEND_PARENT_WATCH           exit when the parent process goes (default on; false/0/no/off: off)
//   LOCALAI_BACKEND_PARENT_WATCH_INTERVAL  how often to look: "2s", "500ms" or seconds (default 2s)
// SIGINT / SIGTERM: stop accepting calls, give those running 5 s, exit 0.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "localai/backend_service.h"
#include "model_loader.h"

namespace {

constexpr int kMaxMessageBytes = 50 * 1024 * 1024;  // LocalAI's client and llama.cpp's backend use 50 MB

std::atomic<int> g_signals{0};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// LOCALAI_BACKEND_PARENT_WATCH_INTERVAL: "2s", "500ms", or a bare number of seconds.
std::chrono::milliseconds parent_watch_interval() {
  const std::string text = env("LOCALAI_BACKEND_PARENT_WATCH_INTERVAL");
  if (text.empty()) return std::chrono::seconds(2);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  if (!(v > 0)) return std::chrono::seconds(2);
  if (unit == "ms") return std::chrono::milliseconds(static_cast<int64_t>(v));
  if (unit.empty() || unit == "s") return std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
  return std::chrono::seconds(2);
}

bool parent_watch_enabled() {
  const std::string v = env("LOCALAI_BACKEND_PARENT_WATCH");
  return !(v == "false" || v == "0" || v == "no" || v == "off");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("pagoda as a LocalAI gRPC backend (docs/localai.md)", "pagoda-localai");
  std::string addr = "127.0.0.1:50051";
  app.add_option("-a,--addr", addr, "HOST:PORT to listen on (LocalAI passes it)");
  CLI11_PARSE(app, argc, argv);

  std::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before gRPC starts its threads: all inherit the mask
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) == 0) g_signals.fetch_add(1);
    }
  }).detach();

  const std::string token = env("LOCALAI_GRPC_AUTH_TOKEN");
  pagoda::localai::BackendService service(pagoda::cli::load_model, token);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "pagoda-localai: error: cannot listen on %s\n", addr.c_str());
    return 1;
  }
  std::fprintf(stderr, "pagoda-localai: listening on %s (port %d)%s\n", addr.c_str(), port,
               token.empty() ? "" : ", auth token required");

  const pid_t parent = getppid();
  const bool watch = parent_watch_enabled();
  const auto interval = parent_watch_interval();
  auto next_look = std::chrono::steady_clock::now() + interval;
  while (g_signals.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (watch && std::chrono::steady_clock::now() >= next_look) {
      next_look += interval;
      if (getppid() != parent) {
        std::fprintf(stderr, "pagoda-localai: the parent process is gone; exiting\n");
        break;
      }
    }
  }
  std::fprintf(stderr, "pagoda-localai: shutting down\n");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}
