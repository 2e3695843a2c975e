#include "server/connection_probe.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace pagoda {
namespace {

// Numeric host and port of a socket address, as getnameinfo writes them (httplib does the same).
bool host_and_port(const sockaddr_storage& addr, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  *host = h;
  *port = std::atoi(p);
  return true;
}

bool matches(int fd, const std::string& remote_addr, int remote_port, int local_port) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  std::string host;
  int port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !host_and_port(addr, len, &host, &port) ||
      port != local_port)
    return false;
  len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !host_and_port(addr, len, &host, &port))
    return false;  // the listening socket and unconnected ones have no peer
  return port == remote_port && host == remote_addr;
}

}  // namespace

std::optional<int> find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
  if (remote_port <= 0 || local_port <= 0) return std::nullopt;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  std::optional<int> found;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    if (matches(static_cast<int>(fd), remote_addr, remote_port, local_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool peer_has_closed(int fd) {
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char byte;
    return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // 0: orderly end of stream
  }
  return false;
}

}  // namespace pagoda
