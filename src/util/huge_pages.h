// Large, long-lived buffers that the kernels stream every token (packed weights, the KV pool) in anonymous memory
// aligned to 2 MiB and advised as transparent huge pages (MADV_HUGEPAGE; Linux's default THP mode, "madvise",
// gives them only when asked). With 4 KiB pages every page boundary of a stream is a TLB miss and a stop for the
// hardware prefetcher: decode of SmolLM2 Q4_1 ran 25-35% faster on huge pages (docs/PERFORMANCE.md, issue #28).
// Where the kernel has no huge page to give, the memory is ordinary pages: same bytes, same behaviour.
// Memory is zeroed and faulted in lazily, as operator new's large allocations are.
// Under AddressSanitizer the buffer comes from operator new[] at its exact size instead, so that an overrun is caught.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pagoda {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // nullptr data() when the memory cannot be had.
  static HugePageBuffer allocate(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;    // bytes usable
  size_t mapped_ = 0;  // bytes mapped (0: allocated by operator new[])
};

}  // namespace pagoda
