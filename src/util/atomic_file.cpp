#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pagoda {

namespace {
Error io_error(const std::string& what, const std::string& path) {
  return make_error(what + " '" + path + "': " + std::strerror(errno));
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
}  // namespace

Status write_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot create", tmp);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = io_error("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return e;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Error e = io_error("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = io_error("cannot rename onto", path);
    ::unlink(tmp.c_str());
    return e;
  }
  const std::string dir = parent_dir(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return io_error("cannot open folder", dir);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return io_error("cannot fsync folder", dir);
  return Status::success();
}

Result<std::string> read_small_file(const std::string& path, size_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return io_error("cannot read", path);
  if (!S_ISREG(st.st_mode)) return make_error("'" + path + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return make_error("'" + path + "' has " + std::to_string(st.st_size) + " bytes; at most " +
                      std::to_string(max_bytes) + " expected");
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open", path);
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return io_error("cannot read", path);
  return out.str();
}

}  // namespace pagoda
