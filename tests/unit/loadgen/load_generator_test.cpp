#include "loadgen/load_generator.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace pagoda::loadgen {
namespace {

using namespace std::chrono_literals;

TEST(ParseBaseUrl, StripsV1AndSlashes) {
  for (const char* url : {"http://127.0.0.1:8000", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1",
                          "http://127.0.0.1:8000/v1/", "127.0.0.1:8000/v1"}) {
    auto e = parse_base_url(url);
    ASSERT_TRUE(e.ok()) << url;
    EXPECT_EQ(e->origin, "http://127.0.0.1:8000") << url;
    EXPECT_EQ(e->path_prefix, "") << url;
  }
  auto proxied = parse_base_url("https://example.com/openai/v1");
  ASSERT_TRUE(proxied.ok());
  EXPECT_EQ(proxied->origin, "https://example.com");
  EXPECT_EQ(proxied->path_prefix, "/openai");
  auto v6 = parse_base_url("http://[::1]:9000/v1");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->origin, "http://[::1]:9000");
}

TEST(ParseBaseUrl, RejectsBadUrls) {
  for (const char* url : {"ftp://host", "http://", "http://:80", "http://host:0", "http://host:99999",
                          "http://host:80x", "http://[::1", "http://host/v1?x=1"})
    EXPECT_FALSE(parse_base_url(url).ok()) << url;
}

// A server on a free local port that answers POST /v1/completions with `handler`.
class FakeServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  explicit FakeServer(Handler handler) {
    server_.Post("/v1/completions", std::move(handler));
    server_.set_tcp_nodelay(true);  // each event leaves when written (Nagle would batch them)
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);  // stop() is a no-op before this
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  LoadGenerator client(const std::string& api_key = "",
                       nlohmann::ordered_json extra = nlohmann::ordered_json::object()) const {
    return LoadGenerator(
        ClientConfig{{"http://127.0.0.1:" + std::to_string(port_), ""}, "fake", api_key, 10, std::move(extra)});
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// Streams max_tokens one-character token chunks `gap` apart (split mid-event to exercise reassembly), a closing
// chunk, usage and [DONE]; counts the requests in flight.
struct StreamingHandler {
  explicit StreamingHandler(std::chrono::milliseconds g) : gap(g) {}

  std::chrono::milliseconds gap;
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::mutex mu;
  std::vector<nlohmann::json> bodies;       // guarded by mu
  std::vector<std::string> authorizations;  // guarded by mu

  void operator()(const httplib::Request& req, httplib::Response& res) {
    auto body = nlohmann::json::parse(req.body);
    {
      std::lock_guard lock(mu);
      bodies.push_back(body);
      authorizations.push_back(req.get_header_value("Authorization"));
    }
    const int now = ++in_flight;
    for (int seen = max_in_flight; now > seen && !max_in_flight.compare_exchange_weak(seen, now);) {
    }
    const int64_t n = body["max_tokens"];
    auto sent = std::make_shared<int64_t>(0);
    res.set_chunked_content_provider("text/event-stream", [this, n, sent](size_t, httplib::DataSink& sink) {
      std::this_thread::sleep_for(gap);
      if (*sent < n) {
        const std::string event = "data: {\"choices\":[{\"text\":\"x\",\"index\":0,\"finish_reason\":null}]}\n\n";
        sink.write(event.data(), 20);
        sink.write(event.data() + 20, event.size() - 20);
        ++*sent;
        return true;
      }
      const std::string tail =
          "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}]}\n\n"
          "data: {\"choices\":[],\"usage\":{\"completion_tokens\":" +
          std::to_string(n) + "}}\n\ndata: [DONE]\n\n";
      --in_flight;
      sink.write(tail.data(), tail.size());
      sink.done();
      return true;
    });
  }
};

TEST(LoadGenerator, RunsARoundWithAtMostConcurrencyInFlight) {
  StreamingHandler handler{10ms};
  FakeServer server([&](const httplib::Request& req, httplib::Response& res) { handler(req, res); });
  const std::vector<std::vector<int32_t>> prompts(6, std::vector<int32_t>{11, 12, 13});
  int64_t last_progress = 0;
  const RoundResult round =
      server.client("sk-test").run_round(2, prompts, std::vector<double>(6, 0.0), 5, [&](int64_t done, int64_t total) {
        EXPECT_EQ(done, last_progress + 1);
        EXPECT_EQ(total, 6);
        last_progress = done;
      });
  EXPECT_EQ(last_progress, 6);
  EXPECT_EQ(handler.max_in_flight.load(), 2);
  ASSERT_EQ(round.records.size(), 6u);
  for (const auto& r : round.records) {
    ASSERT_TRUE(r.ok()) << *r.error;
    EXPECT_EQ(r.input_tokens, 3);
    EXPECT_EQ(r.output_tokens, 5);
    EXPECT_EQ(r.itl_s.size(), 4u);
    EXPECT_GE(r.ttft_s, 0.010);  // the server waits 10 ms before every chunk
    EXPECT_GE(r.e2e_s, 0.060);
    for (double gap : r.itl_s) EXPECT_GE(gap, 0.005);
  }
  EXPECT_GE(round.duration_s, 3 * 0.060);  // 6 requests, 2 at a time
  const auto& body = handler.bodies.front();
  EXPECT_EQ(body["model"], "fake");
  EXPECT_EQ(body["prompt"], nlohmann::json::array({11, 12, 13}));
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(handler.authorizations.front(), "Bearer sk-test");
}

TEST(LoadGenerator, ExtraBodyFieldsAreAddedOrReplaced) {
  StreamingHandler handler{0ms};
  FakeServer server([&](const httplib::Request& req, httplib::Response& res) { handler(req, res); });
  const auto extra = nlohmann::ordered_json::parse(R"({"temperature": 0.5, "logit_bias": {"3": -100}})");
  const RequestRecord r = server.client("", extra).send_one({11, 12}, 2);
  ASSERT_TRUE(r.ok()) << *r.error;
  const auto& body = handler.bodies.front();
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["logit_bias"]["3"], -100);
  EXPECT_EQ(body["stream"], true);
}

TEST(LoadGenerator, PerRequestBodyFieldsGoToTheirOwnRequestAfterTheExtraBody) {
  StreamingHandler handler{0ms};
  FakeServer server([&](const httplib::Request& req, httplib::Response& res) { handler(req, res); });
  const std::vector<std::vector<int32_t>> prompts = {{11}, {12}, {13}};
  std::vector<nlohmann::ordered_json> bodies(3, nlohmann::ordered_json::object());
  bodies[0]["cache_salt"] = "a";
  bodies[2]["cache_salt"] = "c";
  bodies[2]["temperature"] = 0.25;  // replaces the extra body's value for this request only
  const auto extra = nlohmann::ordered_json::parse(R"({"temperature": 0.5})");
  const RoundResult round = server.client("", extra).run_round(1, prompts, {0.0, 0.0, 0.0}, 1, nullptr, &bodies);
  ASSERT_EQ(round.records.size(), 3u);
  ASSERT_EQ(handler.bodies.size(), 3u);
  // One in flight: the server saw the requests in order.
  EXPECT_EQ(handler.bodies[0]["prompt"], nlohmann::json::array({11}));
  EXPECT_EQ(handler.bodies[0]["cache_salt"], "a");
  EXPECT_EQ(handler.bodies[0]["temperature"], 0.5);
  EXPECT_FALSE(handler.bodies[1].contains("cache_salt"));
  EXPECT_EQ(handler.bodies[2]["cache_salt"], "c");
  EXPECT_EQ(handler.bodies[2]["temperature"], 0.25);
  // sent_s: when each request left, from the round's start; one at a time, each after the one before ended.
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(round.records[i].ok()) << *round.records[i].error;
    EXPECT_GE(round.records[i].sent_s, 0.0);
    EXPECT_LE(round.records[i].sent_s + round.records[i].e2e_s, round.duration_s + 1e-3);
  }
  EXPECT_GE(round.records[1].sent_s, round.records[0].sent_s + round.records[0].e2e_s - 1e-3);
  EXPECT_GE(round.records[2].sent_s, round.records[1].sent_s + round.records[1].e2e_s - 1e-3);
}

TEST(LoadGenerator, WaitsForArrivalTimes) {
  StreamingHandler handler{0ms};
  FakeServer server([&](const httplib::Request& req, httplib::Response& res) { handler(req, res); });
  const std::vector<std::vector<int32_t>> prompts(2, std::vector<int32_t>{11});
  const RoundResult round = server.client().run_round(2, prompts, {0.0, 0.2}, 1, nullptr);
  EXPECT_TRUE(round.records[1].ok());
  EXPECT_GE(round.duration_s, 0.2);
}

TEST(LoadGenerator, HttpErrorsKeepTheStatusAndBody) {
  FakeServer server([](const httplib::Request&, httplib::Response& res) {
    res.status = 400;
    res.set_content("{\"error\":{\"message\":\"no such model\"}}\n", "application/json");
  });
  const RequestRecord r = server.client().send_one({11, 12}, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(*r.error, "HTTP 400: {\"error\":{\"message\":\"no such model\"}}");
}

TEST(LoadGenerator, MalformedAndTruncatedStreamsFail) {
  FakeServer garbage([](const httplib::Request&, httplib::Response& res) {
    res.set_content("data: <html>\n\n", "text/event-stream");
  });
  const RequestRecord a = garbage.client().send_one({11}, 4);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error->rfind("malformed stream event: <html>", 0), 0u) << *a.error;
  FakeServer truncated([](const httplib::Request&, httplib::Response& res) {
    res.set_content("data: {\"choices\":[{\"text\":\"x\",\"index\":0,\"finish_reason\":null}]}\n\n",
                    "text/event-stream");
  });
  const RequestRecord b = truncated.client().send_one({11}, 4);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(*b.error, "the stream ended before data: [DONE]");
}

// A TCP socket bound to a free loopback port (not yet listening); sets `port`.
int bound_loopback_socket(int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  port = ntohs(addr.sin_port);
  return fd;
}

// A bare server that answers the first request of each connection with a complete stream and closes the connection
// 50 ms later without announcing it (no "Connection: close"), as llama-server does: a client that reuses the
// connection in between finds it dead only after sending its next request.
class ClosingServer {
 public:
  ClosingServer() {
    fd_ = bound_loopback_socket(port_);
    EXPECT_EQ(listen(fd_, 16), 0);
    thread_ = std::thread([this] {
      for (int conn; (conn = accept(fd_, nullptr, nullptr)) >= 0;) {
        answer_one(conn);
        std::this_thread::sleep_for(50ms);
        close(conn);
      }
    });
  }
  ~ClosingServer() {
    shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  static void answer_one(int conn) {
    std::string in;
    char buf[4096];
    size_t need = std::string::npos;  // request size, once the headers are in
    while (in.size() < need) {
      const ssize_t n = read(conn, buf, sizeof buf);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
      const size_t end = in.find("\r\n\r\n");
      const size_t cl = in.find("Content-Length: ");
      if (end != std::string::npos && cl != std::string::npos) need = end + 4 + std::stoul(in.substr(cl + 16));
    }
    const std::string events =
        "data: {\"choices\":[{\"text\":\"x\",\"index\":0,\"finish_reason\":null}]}\n\n"
        "data: [DONE]\n\n";
    char size[16];
    std::snprintf(size, sizeof size, "%zx", events.size());
    const std::string out = std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n") +
                            "Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n" + size + "\r\n" +
                            events + "\r\n0\r\n\r\n";
    EXPECT_EQ(write(conn, out.data(), out.size()), static_cast<ssize_t>(out.size()));
  }

  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(LoadGenerator, RetriesARequestSentOnAConnectionTheServerClosed) {
  ClosingServer server;
  const LoadGenerator client(ClientConfig{{"http://127.0.0.1:" + std::to_string(server.port()), ""}, "fake", "", 10});
  const std::vector<std::vector<int32_t>> prompts(3, std::vector<int32_t>{11});
  const RoundResult round = client.run_round(1, prompts, {0.0, 0.0, 0.0}, 1, nullptr);
  for (const auto& r : round.records) EXPECT_TRUE(r.ok()) << *r.error;
}

TEST(LoadGenerator, NothingListeningFailsFast) {
  // A port bound but not listening refuses connections, and no other process can take it meanwhile.
  int port = 0;
  const int fd = bound_loopback_socket(port);
  const std::string origin = "http://127.0.0.1:" + std::to_string(port);
  const LoadGenerator client(ClientConfig{{origin, ""}, "fake", "", 10});
  const auto t0 = std::chrono::steady_clock::now();
  const RequestRecord r = client.send_one({11}, 4);
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(*r.error, "cannot connect to " + origin);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

}  // namespace
}  // namespace pagoda::loadgen
