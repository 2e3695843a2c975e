#include "server/connection_front.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "api/openai_response.h"
#include "server/http_errors.h"

namespace pagoda {
namespace {

using MonoClock = std::chrono::steady_clock;

constexpr size_t kReadChunk = size_t{64} << 10;
constexpr auto kSweepInterval = std::chrono::milliseconds(100);
constexpr auto kLingerTime = std::chrono::seconds(2);  // draining a refused client's bytes so it reads the answer
constexpr size_t kMaxLingerBytes = size_t{64} << 20;

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

// A complete error response in OpenAI's shape, closing the connection.
std::string error_response(int status, const std::string& message) {
  const std::string body = to_wire(error_body(status, message));
  return "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// The soft limit on open files up to the hard one: every waiting connection is a descriptor.
void raise_open_file_limit(size_t wanted) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= wanted) return;
  r.rlim_cur = std::min<rlim_t>(r.rlim_max, wanted);
  setrlimit(RLIMIT_NOFILE, &r);
}

}  // namespace

struct ConnectionFront::Connection {
  enum class Phase { kIdle, kHead, kBody, kLinger };
  explicit Connection(const FramerLimits& limits) : framer(limits) {}
  std::string bytes;
  RequestFramer framer;
  Phase phase = Phase::kIdle;
  MonoClock::time_point since;     // when it started waiting here (eviction picks the earliest)
  MonoClock::time_point deadline;  // of the current phase
  bool continue_sent = false;
  size_t lingered = 0;
};

ConnectionFront::ConnectionFront(FrontConfig config, Dispatch dispatch)
    : config_(std::move(config)), dispatch_(std::move(dispatch)) {}

ConnectionFront::~ConnectionFront() { stop(); }

Status ConnectionFront::start(const std::string& host, int port) {
  const std::string where = host + ":" + (port ? std::to_string(port) : std::string("(any port)"));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    return make_error("cannot listen on " + where + " (not an address of this machine)");
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR allows a quick restart; no SO_REUSEPORT, which would let a second server take half the
    // connections of the port silently.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return make_error("cannot listen on " + where + " (address in use, or not an address of this machine)");
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  listen_fd_ = fd;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return make_error("cannot start the connection front (epoll)");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  raise_open_file_limit(config_.max_connections + 4096);
  thread_ = std::thread([this] { run(); });
  return Status::success();
}

void ConnectionFront::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionFront::resume(int fd, std::string leftover) {
  {
    std::lock_guard lock(resumed_mu_);
    if (stop_) {  // stopped (or stopping): nobody will wait on it any more
      ::close(fd);
      return;
    }
    resumed_.emplace_back(fd, std::move(leftover));
  }
  wake();
}

void ConnectionFront::stop_accepting() {
  stop_accepting_ = true;
  if (!thread_.joinable()) return;
  wake();
  // The front's thread closes the listener at its next turn, at once since it was woken; wait for it (bounded).
  for (int i = 0; i < 1000 && !listener_closed_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void ConnectionFront::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(resumed_mu_);
    stop_ = true;
  }
  wake();
  thread_.join();
  for (int fd : {epoll_fd_, wake_fd_, listen_fd_})
    if (fd >= 0) ::close(fd);
  epoll_fd_ = wake_fd_ = listen_fd_ = -1;
  std::lock_guard lock(resumed_mu_);
  for (auto& [fd, _] : resumed_) ::close(fd);
  resumed_.clear();
}

void ConnectionFront::run() {
  std::unordered_map<int, Connection> conns;
  std::vector<epoll_event> events(256);
  std::string chunk(kReadChunk, '\0');
  MonoClock::time_point next_sweep = MonoClock::now() + kSweepInterval;

  auto close_conn = [&](int fd) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns.erase(fd);
    stats_.waiting.store(static_cast<int64_t>(conns.size()), std::memory_order_relaxed);
  };
  // Answers and closes after lingering: the client's bytes still in flight are read and dropped for a moment, so
  // that closing with unread data (a reset) does not destroy the answer before the client reads it.
  auto refuse = [&](int fd, Connection& c, int status, const std::string& message) {
    const std::string response = error_response(status, message);
    [[maybe_unused]] const ssize_t n = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd, SHUT_WR);
    c.phase = Connection::Phase::kLinger;
    c.deadline = MonoClock::now() + kLingerTime;
    c.bytes.clear();
    c.bytes.shrink_to_fit();
  };
  // The framer's verdict on what has arrived: wait, hand over, or refuse.
  auto examine = [&](int fd, Connection& c) {
    if (c.bytes.empty()) return;
    const auto now = MonoClock::now();
    if (c.phase == Connection::Phase::kIdle) {
      c.phase = Connection::Phase::kHead;
      c.deadline = now + config_.head_timeout;
    }
    const RequestFramer::State state = c.framer.advance(c.bytes);
    if (state == RequestFramer::State::kError) {
      stats_.refused_requests.fetch_add(1, std::memory_order_relaxed);
      refuse(fd, c, c.framer.error_status(), c.framer.error_message());
      return;
    }
    if (c.phase == Connection::Phase::kHead && c.framer.head_complete()) {
      c.phase = Connection::Phase::kBody;
      c.deadline = now + config_.body_timeout;
    }
    if (state == RequestFramer::State::kComplete) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      std::string bytes = std::move(c.bytes);
      const bool continue_sent = c.continue_sent;
      const size_t request_size = c.framer.request_size();
      conns.erase(fd);
      stats_.waiting.store(static_cast<int64_t>(conns.size()), std::memory_order_relaxed);
      dispatch_(fd, std::move(bytes), request_size, continue_sent);
      return;
    }
    if (c.framer.expects_continue() && c.framer.head_complete() && !c.continue_sent) {
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] const ssize_t n = ::send(fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      c.continue_sent = true;
    }
  };
  // Closes the connection that has waited longest, to make room.
  auto evict_oldest = [&] {
    auto oldest = std::min_element(conns.begin(), conns.end(),
                                   [](const auto& a, const auto& b) { return a.second.since < b.second.since; });
    if (oldest == conns.end()) return false;
    stats_.evicted.fetch_add(1, std::memory_order_relaxed);
    close_conn(oldest->first);
    return true;
  };
  auto add = [&](int fd, std::string bytes) {
    if (conns.size() >= config_.max_connections && !evict_oldest()) {
      ::close(fd);
      return;
    }
    auto [it, inserted] = conns.try_emplace(fd, config_.limits);
    Connection& c = it->second;
    c.bytes = std::move(bytes);
    c.since = MonoClock::now();
    c.deadline = c.since + config_.idle_timeout;
    stats_.waiting.store(static_cast<int64_t>(conns.size()), std::memory_order_relaxed);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      conns.erase(fd);
      return;
    }
    examine(fd, c);  // a pipelined request may be whole already
  };
  auto on_readable = [&](int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    Connection& c = it->second;
    bool eof = false;
    for (;;) {
      const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
      if (n > 0) {
        if (c.phase == Connection::Phase::kLinger) {
          c.lingered += static_cast<size_t>(n);
          if (c.lingered > kMaxLingerBytes) return close_conn(fd);
        } else {
          c.bytes.append(chunk.data(), static_cast<size_t>(n));
          // More than a whole request could hold: the framer refuses it at its limits before this grows further.
          if (c.bytes.size() > config_.limits.max_head_bytes + config_.limits.max_body_bytes + kReadChunk) break;
        }
        continue;
      }
      if (n == 0) eof = true;
      else if (errno == EINTR) continue;
      else if (errno != EAGAIN && errno != EWOULDBLOCK) eof = true;
      break;
    }
    if (c.phase == Connection::Phase::kLinger) {
      if (eof) close_conn(fd);
      return;
    }
    examine(fd, c);
    // Still waiting here (not handed over, not refused) with the client gone: nothing more can come.
    if (eof) {
      auto still = conns.find(fd);
      if (still != conns.end() && still->second.phase != Connection::Phase::kLinger) close_conn(fd);
    }
  };
  auto sweep = [&](MonoClock::time_point now) {
    std::vector<int> expired;
    for (auto& [fd, c] : conns)
      if (now >= c.deadline) expired.push_back(fd);
    for (int fd : expired) {
      Connection& c = conns.at(fd);
      switch (c.phase) {
        case Connection::Phase::kHead:
        case Connection::Phase::kBody:
          stats_.timed_out.fetch_add(1, std::memory_order_relaxed);
          refuse(fd, c, 408,
                 c.phase == Connection::Phase::kHead
                     ? "the request head did not arrive within " + std::to_string(config_.head_timeout.count()) + " ms"
                     : "the request body did not arrive within " + std::to_string(config_.body_timeout.count()) +
                           " ms");
          break;
        case Connection::Phase::kIdle:
          stats_.timed_out.fetch_add(1, std::memory_order_relaxed);
          close_conn(fd);
          break;
        case Connection::Phase::kLinger:
          close_conn(fd);
          break;
      }
    }
  };

  while (!stop_) {
    if (stop_accepting_ && listen_fd_ >= 0) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
      ::close(listen_fd_);
      listen_fd_ = -1;
      listener_closed_ = true;
    }
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                             static_cast<int>(kSweepInterval.count()));
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == listen_fd_) {
        for (;;) {
          const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (client < 0) break;  // EAGAIN, or out of descriptors: the rest stay in the backlog
          stats_.accepted.fetch_add(1, std::memory_order_relaxed);
          // Tokens are small writes: without TCP_NODELAY, Nagle's algorithm holds each back until the client's
          // delayed ACK (about 40 ms on Linux) on a kept-alive connection.
          int yes = 1;
          setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
          add(client, {});
        }
      } else if (fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd_, &count, sizeof count);
        std::vector<std::pair<int, std::string>> resumed;
        {
          std::lock_guard lock(resumed_mu_);
          resumed.swap(resumed_);
        }
        for (auto& [client, leftover] : resumed) add(client, std::move(leftover));
      } else {
        on_readable(fd);
      }
    }
    const auto now = MonoClock::now();
    if (now >= next_sweep) {
      sweep(now);
      next_sweep = now + kSweepInterval;
    }
  }
  for (auto& [fd, _] : conns) ::close(fd);
  conns.clear();
  stats_.waiting.store(0, std::memory_order_relaxed);
}

}  // namespace pagoda
