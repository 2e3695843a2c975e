#include "server/prebuffered_socket_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace pagoda {
namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

bool numeric_host_port(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  ip = host;
  port = std::atoi(serv);
  return true;
}

}  // namespace

PrebufferedSocketStream::PrebufferedSocketStream(int fd, std::string bytes, std::chrono::milliseconds write_timeout,
                                                 bool drop_continue)
    : fd_(fd), bytes_(std::move(bytes)), write_timeout_(write_timeout), drop_continue_(drop_continue) {}

bool PrebufferedSocketStream::is_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, static_cast<int>(write_timeout_.count())) <= 0 || (p.revents & (POLLERR | POLLHUP))) return false;
  // Writable also means nothing to say about a peer that closed: look for its end of stream without reading.
  char byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

ssize_t PrebufferedSocketStream::read(char* ptr, size_t size) {
  const size_t n = std::min(size, bytes_.size() - pos_);
  std::memcpy(ptr, bytes_.data() + pos_, n);
  pos_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t PrebufferedSocketStream::write(const char* ptr, size_t size) {
  if (drop_continue_ && std::string_view(ptr, size) == kContinue) {
    drop_continue_ = false;
    return static_cast<ssize_t>(size);
  }
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(write_timeout_.count()));
      if (ready > 0 && !(p.revents & (POLLERR | POLLHUP))) continue;
      if (ready < 0 && errno == EINTR) continue;
    }
    write_failed_ = true;
    return -1;
  }
  return static_cast<ssize_t>(size);
}

void PrebufferedSocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !numeric_host_port(addr, len, ip, port)) {
    ip.clear();
    port = 0;
  }
}

void PrebufferedSocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !numeric_host_port(addr, len, ip, port)) {
    ip.clear();
    port = 0;
  }
}

}  // namespace pagoda
