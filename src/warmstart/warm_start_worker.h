// Warm start off the engine thread: the engine hands an eligible request's prompt to this worker at admission and
// goes on stepping the running batch; the worker embeds, searches, projects and runs the slot forward on its own
// thread (with its own one-thread pool, so it never touches the engine's), then calls `on_done` (the engine's
// wake-up). The engine takes the finished decisions at the start of a step and only then lets the request be
// scheduled, so the decision stays deterministic (what is sampled does not depend on timing) while no step waits
// for a projection. Jobs run in submission order. An exception inside a decision becomes that decision's error.
// The worker's slot forward runs on one thread (its own pool), beside the engine's pool: on a machine whose cores
// the engine's pool already fills, a decision competes with decode for a core while it runs (a few ms).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/sampler.h"
#include "util/result.h"
#include "util/thread_pool.h"
#include "warmstart/warm_start_service.h"

namespace pagoda::warmstart {

class WarmStartWorker {
 public:
  struct Job {
    uint64_t id = 0;  // the engine's sequence id
    std::vector<int32_t> prompt;
    SamplingParams sampling;
  };
  struct Done {
    uint64_t id = 0;
    Result<WarmStartDecision> decision = WarmStartDecision{};
  };

  WarmStartWorker(std::shared_ptr<WarmStartService> service, std::function<void()> on_done);
  ~WarmStartWorker();  // finishes the job in hand, drops the rest
  WarmStartWorker(const WarmStartWorker&) = delete;
  WarmStartWorker& operator=(const WarmStartWorker&) = delete;

  void submit(Job job);
  // Drops a job not started yet (its request was cancelled); one already running finishes and is dropped later.
  void cancel(uint64_t id);
  // The decisions finished since the last call, in submission order.
  std::vector<Done> take_done();

 private:
  void run();

  std::shared_ptr<WarmStartService> service_;
  std::function<void()> on_done_;
  ThreadPool pool_{1};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Done> done_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pagoda::warmstart
