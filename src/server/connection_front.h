// The event-driven front of `pagoda serve`: one thread (epoll) accepts connections and reads requests, and hands a
// connection to a worker thread only when a whole request has arrived (server/http_request_framer.h); a worker
// gives a kept-alive connection back when its response is written. A client that is slow or silent (headers a
// byte a second, a body that never finishes, a connection left open and idle) costs a table entry and a file
// descriptor, never a thread, so it cannot starve the clients that send requests.
//
// Limits (docs/server.md, "Slow clients"): a request's head must arrive within head_timeout of its first byte, and
// its body within body_timeout of the end of the head (408 and close otherwise); a kept-alive connection waits at
// most idle_timeout for its next request; at most max_connections connections wait here at once, and when a new
// one would exceed that, the one that has waited longest is closed (a client that sends its request promptly is
// never the oldest for long, so a flood of slow connections evicts its own members). A malformed or oversized
// request is answered (400, 413, 431) and the connection closed after the client's remaining bytes are drained
// for a moment, so that the answer reaches it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/http_request_framer.h"
#include "util/result.h"

namespace pagoda {

struct FrontConfig {
  size_t max_connections = 4096;
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000};
  FramerLimits limits;
};

struct FrontStats {
  std::atomic<int64_t> waiting{0};           // connections in the front now (reading, idle or lingering)
  std::atomic<int64_t> accepted{0};          // connections accepted in all
  std::atomic<int64_t> timed_out{0};         // closed for a missed head, body or idle deadline
  std::atomic<int64_t> evicted{0};           // closed to make room (max_connections)
  std::atomic<int64_t> refused_requests{0};  // answered 400/413/431 by the framer
};

class ConnectionFront {
 public:
  // A whole request has arrived on fd: it is bytes[0, request_size) (what follows is the start of the next);
  // continue_sent: the front answered its "Expect: 100-continue". Called on the front's thread; must not block.
  // The callee owns fd from then on: it closes it, or gives it back with resume().
  using Dispatch = std::function<void(int fd, std::string bytes, size_t request_size, bool continue_sent)>;

  ConnectionFront(FrontConfig config, Dispatch dispatch);
  ~ConnectionFront();
  ConnectionFront(const ConnectionFront&) = delete;
  ConnectionFront& operator=(const ConnectionFront&) = delete;

  // Listens on host:port (port 0: any free port) and starts the front's thread. An error names the address.
  Status start(const std::string& host, int port);
  int port() const { return port_; }

  // Any thread: the connection waits here for its next request; `leftover` is what the client already sent of it.
  void resume(int fd, std::string leftover);
  // Any thread: new connections are refused (the listening socket is closed when this returns); connections
  // already here stay.
  void stop_accepting();
  // Closes every connection waiting here and joins the thread. Connections held by workers are theirs to close.
  void stop();

  const FrontStats& stats() const { return stats_; }

 private:
  struct Connection;
  void run();
  void wake();

  FrontConfig config_;
  Dispatch dispatch_;
  FrontStats stats_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stop_accepting_{false};
  std::atomic<bool> listener_closed_{false};
  std::mutex resumed_mu_;
  std::vector<std::pair<int, std::string>> resumed_;  // handed back by workers, registered by the front's thread
};

}  // namespace pagoda
