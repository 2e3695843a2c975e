// An injectable monotonic clock, so that time-ordered policies (LRU eviction) are testable.
#pragma once

#include <chrono>
#include <cstdint>

namespace pagoda {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_ns() = 0;
};

class SteadyClock final : public Clock {
 public:
  uint64_t now_ns() override {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }
};

// Advances only when told to (tests).
class ManualClock final : public Clock {
 public:
  uint64_t now_ns() override { return now_; }
  void advance(uint64_t ns) { now_ += ns; }

 private:
  uint64_t now_ = 0;
};

}  // namespace pagoda
