#include "util/memory_budget.h"

#include <unistd.h>

namespace pagoda {

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{1} << 40;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

Result<uint64_t> checked_allocation_bytes(std::initializer_list<uint64_t> factors, const std::string& what) {
  uint64_t total = 1;
  for (uint64_t f : factors)
    if (__builtin_mul_overflow(total, f, &total))
      return make_error(what + " would need more memory than can be addressed");
  const uint64_t limit = physical_memory_bytes();
  if (total > limit)
    return make_error(what + " would need " + std::to_string(total >> 20) + " MiB, more than this machine's " +
                      std::to_string(limit >> 20) + " MiB");
  return total;
}

}  // namespace pagoda
