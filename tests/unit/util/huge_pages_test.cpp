#include "util/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace pagoda {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

constexpr size_t kHugePage = size_t{2} << 20;

// AnonHugePages (kB) of the mapping of /proc/self/smaps that contains p; -1 if none is found.
long anon_huge_kb(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = lo <= a && a < hi;
      continue;
    }
    long kb = 0;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1) return kb;
  }
  return -1;
}

TEST(HugePageBuffer, ZeroBytesGiveNoMemory) {
  const HugePageBuffer b = HugePageBuffer::allocate(0);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
}

TEST(HugePageBuffer, ZeroedWritableAndAlignedToAHugePage) {
  const size_t bytes = 5 * kHugePage + 17;
  HugePageBuffer b = HugePageBuffer::allocate(bytes);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), bytes);
  if (!kAsan) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kHugePage, 0u);
  }
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; i += 4093) nonzero += b.data()[i] != 0;
  nonzero += b.data()[bytes - 1] != 0;
  EXPECT_EQ(nonzero, 0u);
  std::memset(b.data(), 0xA5, bytes);  // every byte is ours (ASan checks the end exactly)
  EXPECT_EQ(b.data()[bytes - 1], 0xA5);
}

TEST(HugePageBuffer, MoveTransfersOwnership) {
  HugePageBuffer a = HugePageBuffer::allocate(4096);
  uint8_t* p = a.data();
  ASSERT_NE(p, nullptr);
  HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), p);
  HugePageBuffer c = HugePageBuffer::allocate(8192);
  c = std::move(b);  // c's own memory is released, b's taken
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 4096u);
  EXPECT_EQ(b.data(), nullptr);
}

// Where the kernel has transparent huge pages in "madvise" or "always" mode, a touched buffer is backed by them.
TEST(HugePageBuffer, IsBackedByHugePagesWhereTheKernelHasThem) {
  if (kAsan) GTEST_SKIP() << "AddressSanitizer build: operator new[] memory";
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::stringstream mode;
  mode << mode_file.rdbuf();
  if (mode.str().empty() || mode.str().find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are off on this kernel";
  HugePageBuffer b = HugePageBuffer::allocate(4 * kHugePage);
  ASSERT_NE(b.data(), nullptr);
  std::memset(b.data(), 1, b.size());
  EXPECT_GT(anon_huge_kb(b.data()), 0) << "THP mode: " << mode.str();
}

}  // namespace
}  // namespace pagoda
