#include "warmstart/warm_start_worker.h"

namespace pagoda::warmstart {

WarmStartWorker::WarmStartWorker(std::shared_ptr<WarmStartService> service, std::function<void()> on_done)
    : service_(std::move(service)), on_done_(std::move(on_done)) {
  thread_ = std::thread([this] { run(); });
}

WarmStartWorker::~WarmStartWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WarmStartWorker::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void WarmStartWorker::cancel(uint64_t id) {
  std::lock_guard lock(mu_);
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
    if (it->id == id) {
      jobs_.erase(it);
      return;
    }
}

std::vector<WarmStartWorker::Done> WarmStartWorker::take_done() {
  std::lock_guard lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

void WarmStartWorker::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Done d{job.id, WarmStartDecision{}};
    try {
      d.decision = service_->first_token(job.prompt, job.sampling, pool_);
    } catch (const std::exception& e) {  // out of memory, say: this request fails, not the process
      d.decision = make_error(std::string("warm start failed: ") + e.what());
    }
    {
      std::lock_guard lock(mu_);
      done_.push_back(std::move(d));
    }
    if (on_done_) on_done_();
  }
}

}  // namespace pagoda::warmstart
