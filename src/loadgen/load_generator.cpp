#include "loadgen/load_generator.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "loadgen/completion_stream.h"
#include "loadgen/workload.h"

namespace pagoda::loadgen {
namespace {

using MonoClock = std::chrono::steady_clock;

// At most this much of an error response body is kept for the message.
constexpr size_t kMaxErrorBody = 300;

double seconds_since(MonoClock::time_point t0) { return std::chrono::duration<double>(MonoClock::now() - t0).count(); }

bool is_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The response body of a failed request, as one short line.
std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// What went wrong when no complete HTTP response arrived.
std::string transport_error(httplib::Error err, const std::string& origin) {
  switch (err) {
    case httplib::Error::Connection: return "cannot connect to " + origin;
    case httplib::Error::ConnectionTimeout: return "timed out connecting to " + origin;
    case httplib::Error::Read: return "the connection failed or timed out while reading the response";
    case httplib::Error::Write: return "the connection failed while sending the request";
    default: return "HTTP client error: " + httplib::to_string(err);
  }
}

std::string request_body(const std::string& model, const std::vector<int32_t>& prompt, bool as_text,
                         int64_t max_tokens, const nlohmann::ordered_json& extra,
                         const nlohmann::ordered_json* per_request) {
  nlohmann::ordered_json body = {{"model", model},
                                       {"prompt", as_text ? nlohmann::ordered_json(token_ids_as_text(prompt))
                                                          : nlohmann::ordered_json(prompt)},
                                       {"max_tokens", max_tokens},
                                       {"temperature", 0},
                                       {"ignore_eos", true},
                                       {"stream", true},
                                       {"stream_options", {{"include_usage", true}}}};
  for (const auto& [key, value] : extra.items()) body[key] = value;  // --extra-body: added or replaced
  if (per_request)
    for (const auto& [key, value] : per_request->items()) body[key] = value;
  return body.dump();
}

}  // namespace

Result<Endpoint> parse_base_url(std::string_view url) {
  const std::string quoted = "--base-url '" + std::string(url) + "'";
  std::string_view rest = url;
  std::string scheme = "http";
  if (const size_t sep = rest.find("://"); sep != std::string_view::npos) {
    scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  }
  if (scheme != "http" && scheme != "https") return make_error(quoted + ": the scheme must be http or https");
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  // host or [IPv6 address], then an optional :port
  size_t colon = authority.find(':');
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return make_error(quoted + ": unterminated '[' in the host");
    colon = close + 1 < authority.size() ? close + 1 : std::string_view::npos;
    if (colon != std::string_view::npos && authority[colon] != ':') return make_error(quoted + ": bad host");
  }
  const std::string_view host = authority.substr(0, colon);
  if (host.empty() || host == "[]") return make_error(quoted + " names no host");
  if (colon != std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    const bool valid = is_digits(port) && port.size() <= 5 && std::stoi(std::string(port)) >= 1 &&
                       std::stoi(std::string(port)) <= 65535;
    if (!valid) return make_error(quoted + ": the port must be a number in [1, 65535]");
  }
  if (path.find_first_of("?#") != std::string_view::npos) return make_error(quoted + ": no query or fragment allowed");
  while (path.ends_with('/')) path.remove_suffix(1);
  if (path.ends_with("/v1")) path.remove_suffix(3);
  while (path.ends_with('/')) path.remove_suffix(1);
  return Endpoint{scheme + "://" + std::string(authority), std::string(path)};
}

void LoadGenerator::configure(httplib::Client& client) const {
  const auto timeout = std::chrono::duration<double>(config_.timeout_s);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  client.set_keep_alive(true);
  // The request goes out in two writes (headers, body); with Nagle's algorithm the body could wait for the
  // server's delayed ACK, adding up to 40 ms to every time to first token.
  client.set_tcp_nodelay(true);
}

RequestRecord LoadGenerator::send(httplib::Client& client, const std::vector<int32_t>& prompt, int64_t max_tokens,
                                  const nlohmann::ordered_json* body_fields) const {
  httplib::Request req;
  req.method = "POST";
  req.path = config_.endpoint.path_prefix + "/v1/completions";
  req.body = request_body(config_.model, prompt, config_.text_prompts, max_tokens, config_.extra_body, body_fields);
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  req.set_header("Accept-Encoding", "identity");  // a compressed stream would arrive in bursts
  if (!config_.api_key.empty()) req.set_header("Authorization", "Bearer " + config_.api_key);
  // The server may close a kept-alive connection just before its reuse (llama-server closes it after every
  // streamed response); httplib notices only when the request then fails without any response. Such a request
  // never reached the server, so it is sent again, once, on a new connection and timed afresh.
  const bool reused = client.is_socket_open() > 0;
  bool no_response = false;
  RequestRecord r = attempt(client, req, no_response);
  if (reused && no_response) r = attempt(client, req, no_response);
  r.input_tokens = config_.text_prompts ? r.reported_prompt_tokens.value_or(0) : static_cast<int64_t>(prompt.size());
  return r;
}

RequestRecord LoadGenerator::attempt(httplib::Client& client, httplib::Request& req, bool& no_response) const {
  RequestRecord r;
  CompletionStream stream;
  int status = 0;
  std::string error_body;
  std::optional<std::string> stream_error;
  const auto t0 = MonoClock::now();
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {  // keep the start of an error body for the message
      error_body.append(data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
      return true;
    }
    if (Status s = stream.feed(std::string_view(data, n), seconds_since(t0)); !s.ok()) {
      stream_error = s.error().message;
      return false;  // stop reading: the request has failed
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = client.send(req, res, err);
  const double e2e_s = seconds_since(t0);

  no_response = !sent && status == 0 && (err == httplib::Error::Read || err == httplib::Error::Write);
  if (stream_error) {
    r.error = *stream_error;
  } else if (status != 0 && status != 200) {
    r.error = "HTTP " + std::to_string(status) + (error_body.empty() ? "" : ": " + one_line(error_body));
  } else if (!sent) {
    r.error = transport_error(err, config_.endpoint.origin);
  } else if (Status s = stream.finish(e2e_s, r); !s.ok()) {
    r.error = s.error().message;
  }
  return r;
}

RequestRecord LoadGenerator::send_one(const std::vector<int32_t>& prompt, int64_t max_tokens) const {
  httplib::Client client(config_.endpoint.origin);
  configure(client);
  return send(client, prompt, max_tokens);
}

RoundResult LoadGenerator::run_round(int32_t concurrency, const std::vector<std::vector<int32_t>>& prompts,
                                     const std::vector<double>& arrivals_s, int64_t max_tokens,
                                     const ProgressFn& progress,
                                     const std::vector<nlohmann::ordered_json>* bodies) const {
  assert(concurrency >= 1 && arrivals_s.size() == prompts.size());
  assert(!bodies || bodies->size() == prompts.size());
  const size_t n = prompts.size();
  RoundResult result;
  result.records.resize(n);
  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  int64_t finished = 0;  // guarded by progress_mu
  const auto start = MonoClock::now();
  auto worker = [&] {
    httplib::Client client(config_.endpoint.origin);
    configure(client);
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<MonoClock::duration>(std::chrono::duration<double>(arrivals_s[i])));
      const double sent_s = seconds_since(start);
      result.records[i] = send(client, prompts[i], max_tokens, bodies ? &(*bodies)[i] : nullptr);
      result.records[i].sent_s = sent_s;
      std::lock_guard lock(progress_mu);
      ++finished;
      if (progress) progress(finished, static_cast<int64_t>(n));
    }
  };
  std::vector<std::thread> threads;
  const size_t num_threads = std::min(static_cast<size_t>(concurrency), n);
  for (size_t t = 0; t < num_threads; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  result.duration_s = seconds_since(start);
  return result;
}

}  // namespace pagoda::loadgen
