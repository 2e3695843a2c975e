#include "engine/mask_prefetcher.h"

namespace pagoda {

MaskPrefetcher::MaskPrefetcher() : thread_([this] { run(); }) {}

MaskPrefetcher::~MaskPrefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MaskPrefetcher::start(std::vector<Job> jobs) {
  if (jobs.empty()) return;
  {
    std::lock_guard lock(mu_);
    jobs_ = std::move(jobs);
    busy_ = true;
  }
  cv_.notify_all();
}

void MaskPrefetcher::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
}

uint64_t MaskPrefetcher::masks_computed() const {
  std::lock_guard lock(mu_);
  return computed_;
}

void MaskPrefetcher::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || busy_; });
    if (stop_) return;
    std::vector<Job> jobs = std::move(jobs_);
    jobs_.clear();
    lock.unlock();
    for (const Job& j : jobs) j.grammar->mask(j.state);  // fills the grammar's mask cache
    lock.lock();
    computed_ += jobs.size();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace pagoda
