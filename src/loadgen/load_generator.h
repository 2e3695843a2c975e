// Drives an OpenAI-compatible server (pagoda serve, llama.cpp's llama-server, vLLM) with streamed completion
// requests and records what each one measured.
//
// Every request is POST {base}/v1/completions with a token-id prompt (or its text, token_ids_as_text, for routers
// that refuse ids), "stream": true, usage in the stream,
// temperature 0 and ignore_eos, so its output is exactly max_tokens long on servers that honour ignore_eos.
// A round runs its prompts with at most `concurrency` in flight: one thread per slot, each with its own HTTP
// connection, taking the next prompt as soon as its previous one finishes and not before the prompt's arrival
// time. Times are measured from just before the request is sent (connecting included).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/request_record.h"
#include "util/result.h"

namespace httplib {
class Client;
struct Request;
}  // namespace httplib

namespace pagoda::loadgen {

// Where requests go, split from a base URL such as "http://127.0.0.1:8000/v1".
struct Endpoint {
  std::string origin;       // "http://127.0.0.1:8000": scheme, host and port
  std::string path_prefix;  // "" or e.g. "/proxy": the path before /v1, without a trailing '/'
};

// Accepts http:// or https:// (http when no scheme is given), an optional port and path; a trailing "/" and "/v1"
// are dropped, so "http://h:8000", "http://h:8000/" and "http://h:8000/v1/" all name the same server.
Result<Endpoint> parse_base_url(std::string_view url);

struct ClientConfig {
  Endpoint endpoint;
  std::string model;       // the request's "model" field
  std::string api_key;     // sent as "Authorization: Bearer KEY" when not empty
  double timeout_s = 600;  // longest wait for the connection, or for the next bytes of a response
  nlohmann::ordered_json extra_body = nlohmann::ordered_json::object();  // fields added to (or replacing) each body's
  bool text_prompts = false;  // send token_ids_as_text(prompt) instead of the ids
};

struct RoundResult {
  std::vector<RequestRecord> records;  // [prompts], in prompt order
  double duration_s = 0;               // round start -> last response ended
};

// Called after each request of a round with (requests finished, requests in the round), from worker threads
// one call at a time.
using ProgressFn = std::function<void(int64_t, int64_t)>;

class LoadGenerator {
 public:
  explicit LoadGenerator(ClientConfig config) : config_(std::move(config)) {}

  // One request on a fresh connection (a warm-up or reachability probe).
  RequestRecord send_one(const std::vector<int32_t>& prompt, int64_t max_tokens) const;

  // Sends prompts[i] no earlier than arrivals_s[i] seconds after the round starts, with at most `concurrency`
  // requests in flight. `bodies`, when given, holds one object per prompt whose fields are added to (or replace)
  // that request's body after the config's extra_body (a per-request cache_salt, say).
  // Preconditions: concurrency >= 1, arrivals_s.size() == prompts.size(), and bodies->size() == prompts.size().
  RoundResult run_round(int32_t concurrency, const std::vector<std::vector<int32_t>>& prompts,
                        const std::vector<double>& arrivals_s, int64_t max_tokens, const ProgressFn& progress,
                        const std::vector<nlohmann::ordered_json>* bodies = nullptr) const;

 private:
  void configure(httplib::Client& client) const;
  RequestRecord send(httplib::Client& client, const std::vector<int32_t>& prompt, int64_t max_tokens,
                     const nlohmann::ordered_json* body_fields = nullptr) const;
  // Sends `req` once and reads the stream; `no_response` tells whether it failed before any response arrived.
  RequestRecord attempt(httplib::Client& client, httplib::Request& req, bool& no_response) const;

  ClientConfig config_;
};

}  // namespace pagoda::loadgen
