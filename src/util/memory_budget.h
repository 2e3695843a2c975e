// Guards against allocations that a (possibly hostile) model file or flag makes unreasonably large: sizes are
// computed with overflow checks and compared with the machine's physical memory before anything is allocated.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "util/result.h"

namespace pagoda {

uint64_t physical_memory_bytes();

// The product of `factors` in bytes, or an Error naming `what` if it overflows or exceeds physical memory.
Result<uint64_t> checked_allocation_bytes(std::initializer_list<uint64_t> factors, const std::string& what);

}  // namespace pagoda
