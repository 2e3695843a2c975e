#include "util/huge_pages.h"

#include <sys/mman.h>

#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define PAGODA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAGODA_ASAN 1
#endif
#endif

namespace pagoda {
namespace {
[[maybe_unused]] constexpr size_t kHugePage = size_t{2} << 20;  // unused under ASan (plain new there)
}

HugePageBuffer HugePageBuffer::allocate(size_t bytes) {
  HugePageBuffer b;
  if (bytes == 0) return b;
#ifdef PAGODA_ASAN
  b.data_ = new (std::nothrow) uint8_t[bytes]();
  if (b.data_ != nullptr) b.size_ = bytes;
  return b;
#else
  const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  if (size < bytes) return b;  // overflow
  // One huge page more than needed, then the ends unmapped, so the buffer starts on a 2 MiB boundary.
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return b;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  const uintptr_t end = start + size + kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // advice: ordinary pages where none are given
#endif
  b.data_ = reinterpret_cast<uint8_t*>(aligned);
  b.size_ = bytes;
  b.mapped_ = size;
  return b;
#endif
}

void HugePageBuffer::release() {
  if (data_ == nullptr) return;
  if (mapped_ != 0)
    munmap(data_, mapped_);
  else
    delete[] data_;
  data_ = nullptr;
  size_ = mapped_ = 0;
}

HugePageBuffer::~HugePageBuffer() { release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

}  // namespace pagoda
