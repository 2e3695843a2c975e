#include "engine/request_stream.h"

namespace pagoda {

bool RequestStream::next(StreamEvent* event) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty() || open_choices_ == 0; });
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

RequestStream::WaitResult RequestStream::next_for(StreamEvent* event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty() || open_choices_ == 0; })) return WaitResult::kTimeout;
  if (events_.empty()) return WaitResult::kEnd;
  *event = std::move(events_.front());
  events_.pop_front();
  return WaitResult::kEvent;
}

bool RequestStream::try_next(StreamEvent* event) {
  std::lock_guard lock(mu_);
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void RequestStream::cancel() {
  cancel_.store(true, std::memory_order_release);
  if (wake_) wake_();
}

bool RequestStream::finished() const {
  std::lock_guard lock(mu_);
  return open_choices_ == 0 && events_.empty();
}

void RequestStream::push(StreamEvent event) {
  {
    std::lock_guard lock(mu_);
    if (event.kind == StreamEvent::Kind::kFinished && open_choices_ > 0) --open_choices_;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

}  // namespace pagoda
