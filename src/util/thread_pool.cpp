#include "util/thread_pool.h"

#include <sched.h>

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define PAGODA_CPU_RELAX() _mm_pause()
#else
#define PAGODA_CPU_RELAX() ((void)0)
#endif

namespace pagoda {
namespace {
constexpr int kSpinIterations = 1 << 16;
constexpr uint32_t kYieldEvery = 256;
}  // namespace

int ThreadPool::default_num_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)), barrier_flags_(num_threads_) {
  workers_.reserve(num_threads_ - 1);
  for (int tid = 1; tid < num_threads_; ++tid) workers_.emplace_back([this, tid] { worker_loop(tid); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_raw(RawFn fn, void* ctx) {
  fn_ = fn;
  ctx_ = ctx;
  first_error_ = nullptr;
  // No worker is running now: the barrier counts start again from zero (a failed run may have left them apart).
  for (BarrierFlag& f : barrier_flags_) f.arrivals.store(0, std::memory_order_relaxed);
  run_failed_.store(false, std::memory_order_relaxed);
  if (num_threads_ == 1) {
    fn(ctx, 0);  // an exception propagates directly: there is no other thread to wait for
    return;
  }
  pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  call_catching(0);  // never leave before the workers are done: they use ctx, which lives on the caller's stack
  // Spin, yielding now and then: with more threads than cores the workers need this core to finish.
  for (uint32_t spins = 1; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins % kYieldEvery == 0)
      std::this_thread::yield();
    else
      PAGODA_CPU_RELAX();
  }
  if (first_error_) {
    std::exception_ptr error = std::move(first_error_);
    first_error_ = nullptr;
    std::rethrow_exception(error);
  }
}

namespace {
// Thrown by barrier() in the threads that wait for one that threw; never the run's reported error.
struct RunFailed {};
}  // namespace

void ThreadPool::call_catching(int tid) {
  try {
    fn_(ctx_, tid);
  } catch (const RunFailed&) {
    // another thread's exception is the one to report
  } catch (...) {
    run_failed_.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!first_error_) first_error_ = std::current_exception();
  }
}

void ThreadPool::barrier(int tid, bool (*idle)(void*), void* ctx) {
  if (num_threads_ == 1) return;
  const uint64_t mine = barrier_flags_[tid].arrivals.load(std::memory_order_relaxed) + 1;
  barrier_flags_[tid].arrivals.store(mine, std::memory_order_release);
  for (int other = 0; other < num_threads_; ++other) {
    if (other == tid) continue;
    for (uint32_t spins = 1; barrier_flags_[other].arrivals.load(std::memory_order_acquire) < mine; ++spins) {
      if (run_failed_.load(std::memory_order_acquire)) throw RunFailed{};
      if (idle != nullptr && idle(ctx)) continue;
      idle = nullptr;  // nothing left to do while waiting
      if (spins % kYieldEvery == 0)
        std::this_thread::yield();
      else
        PAGODA_CPU_RELAX();
    }
  }
}

void ThreadPool::worker_loop(int tid) {
  // Generation 0 is the one at construction: a job published before this thread got going is still seen.
  uint64_t seen = 0;
  for (;;) {
    uint64_t now = seen;
    for (int i = 1; i <= kSpinIterations; ++i) {
      now = generation_.load(std::memory_order_acquire);
      if (now != seen) break;
      if (i % kYieldEvery == 0)
        std::this_thread::yield();  // lets a thread with work run when oversubscribed
      else
        PAGODA_CPU_RELAX();
    }
    while (now == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      now = generation_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    call_catching(tid);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace pagoda
