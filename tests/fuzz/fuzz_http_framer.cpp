// libFuzzer target: untrusted bytes through the request framer of the connection front (server/http_request_framer.h),
// which decides, before any HTTP library sees a byte, where a request ends. Invariants: the verdict does not depend
// on how the bytes arrived (all at once, or in pieces whose sizes the input's first bytes choose, as a slow client
// sends them); a complete request lies within the bytes; an error carries a 4xx status and a message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http_request_framer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t step_seed = data[0] % 8 + 1;  // piece sizes 1..8 bytes, then growing
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  pagoda::FramerLimits limits;
  limits.max_head_bytes = 512;
  limits.max_body_bytes = 1024;

  pagoda::RequestFramer whole(limits);
  const auto verdict = whole.advance(bytes);

  pagoda::RequestFramer pieces(limits);
  auto state = pagoda::RequestFramer::State::kNeedMore;
  size_t n = 0, step = step_seed;
  while (state == pagoda::RequestFramer::State::kNeedMore && n < bytes.size()) {
    n = n + step > bytes.size() ? bytes.size() : n + step;
    state = pieces.advance(bytes.substr(0, n));
    step = step * 2 % 97 + 1;
  }
  if (state != verdict) __builtin_trap();
  if (verdict == pagoda::RequestFramer::State::kComplete) {
    if (whole.request_size() != pieces.request_size() || whole.request_size() > bytes.size() ||
        whole.request_size() == 0)
      __builtin_trap();
  }
  if (verdict == pagoda::RequestFramer::State::kError) {
    if (whole.error_status() != pieces.error_status() || whole.error_status() < 400 || whole.error_status() > 499 ||
        whole.error_message().empty())
      __builtin_trap();
  }
  return 0;
}
