// A read-only memory mapping of a whole file. Model weights stay in the page cache and are read in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "util/result.h"

namespace pagoda {

class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the whole pages inside [p, p + n) from this process's memory (madvise MADV_DONTNEED): for bytes that were
  // copied elsewhere. They stay readable: touching them again reads the file.
  void release_pages(const uint8_t* p, size_t n) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size) : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace pagoda
