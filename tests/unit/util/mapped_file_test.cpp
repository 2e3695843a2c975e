// MappedFile: a regular file mapped read-only; release_pages drops pages from memory and they read back the same.
#include "util/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace pagoda {
namespace {

std::string write_temp(const std::vector<uint8_t>& bytes) {
  char path[] = "/tmp/pagoda_mapped_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

// RssFile of this process in KiB (/proc/self/status): file-backed pages mapped in.
long rss_file_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("RssFile:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

TEST(MappedFileTest, ReleasedPagesReadBackTheSameBytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<uint8_t> bytes(512 * page + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  const std::string path = write_temp(bytes);
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  const MappedFile& f = **file;
  unsigned sum = 0;
  for (size_t i = 0; i < f.size(); ++i) sum += f.data()[i];  // fault every page in
  EXPECT_GT(sum, 0u);
  // Release an unaligned range: only the pages wholly inside it go (511 of them), and they read back the same.
  const long before = rss_file_kib();
  f.release_pages(f.data() + 100, 512 * page);
  const long after = rss_file_kib();
  if (before >= 0) {
    EXPECT_GE(before - after, static_cast<long>(256 * page / 1024)) << before << " -> " << after << " KiB";
  }
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(f.data()[i], bytes[i]) << "byte " << i;
  // Ranges outside the mapping are ignored.
  f.release_pages(f.data() + f.size(), page);
  f.release_pages(bytes.data(), page);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pagoda
