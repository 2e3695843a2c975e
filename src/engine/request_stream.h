// The output side of one request: the engine thread pushes events, a caller (CLI, HTTP handler) reads them and
// may cancel at any moment. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/request.h"

namespace pagoda {

class RequestStream {
 public:
  RequestStream(std::string id, std::vector<int32_t> prompt_ids, int32_t num_choices, std::function<void()> wake)
      : id_(std::move(id)), prompt_ids_(std::move(prompt_ids)), open_choices_(num_choices), wake_(std::move(wake)) {}

  const std::string& id() const { return id_; }
  const std::vector<int32_t>& prompt_ids() const { return prompt_ids_; }

  // Blocks until an event arrives; false once every choice has finished and all events were read.
  bool next(StreamEvent* event);
  // Non-blocking: false when no event is queued right now.
  bool try_next(StreamEvent* event);
  // Waits at most `timeout` for an event (an HTTP handler wakes up now and then to check its client).
  enum class WaitResult { kEvent, kTimeout, kEnd };
  WaitResult next_for(StreamEvent* event, std::chrono::milliseconds timeout);
  // Asks the engine to stop this request; its choices then finish with kCancelled (or whatever came first).
  void cancel();
  bool cancel_requested() const { return cancel_.load(std::memory_order_acquire); }
  bool finished() const;

  // --- engine side.
  void push(StreamEvent event);

 private:
  const std::string id_;
  const std::vector<int32_t> prompt_ids_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;
  int32_t open_choices_;
  std::atomic<bool> cancel_{false};
  std::function<void()> wake_;
};

}  // namespace pagoda
