#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pagoda {

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not block before the regular-file check below rejects it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return make_error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return make_error("cannot stat '" + path + "': " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("'" + path + "' is not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return make_error("cannot map '" + path + "': " + why);
    }
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(path, data, size));
}

void MappedFile::release_pages(const uint8_t* p, size_t n) const {
  if (data_ == nullptr || p < data_ || p + n > data_ + size_ || n == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace pagoda
