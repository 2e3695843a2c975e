// A fork-join pool for the kernels. The calling thread is worker 0; the others spin briefly on a generation
// counter and then sleep on it (futex via std::atomic::wait), so dispatch costs well under a microsecond while
// work keeps coming (decode issues ~100 parallel regions per token) and nothing burns a core when idle.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pagoda {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(thread_index) once on each of num_threads() threads and returns when all have finished.
  // An exception thrown by fn on any thread is caught there; once every thread has finished, the first one
  // caught is rethrown on the calling thread (the others are dropped). The pool stays usable afterwards.
  template <typename F>
  void run(F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run_raw([](void* ctx, int tid) { (*static_cast<Fn*>(ctx))(tid); },
            const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Inside run(): returns once every thread of the run has called barrier() as many times as this one (so writes
  // made before it are visible to every thread after it). Every thread must call it the same number of times per
  // run. A spin on per-thread flags: with all threads already running it costs one cache-line hop, where a new
  // run() costs two (the start signal, then the finish). If another thread of the run threw, it throws too (the
  // run then rethrows the first exception), so a failing thread cannot leave the others waiting.
  void barrier(int tid) { barrier(tid, nullptr, nullptr); }
  // The same, calling idle(ctx) while it waits, instead of pausing, for as long as idle returns true: a thread that
  // arrives first can do work that needs nothing from the others (the forward asks for its next weights).
  void barrier(int tid, bool (*idle)(void*), void* ctx);

  // Splits [0, n) into num_threads() contiguous ranges, in order, and calls fn(begin, end) for each non-empty one.
  // A single item runs on the calling thread (no dispatch, no other thread to wait for).
  template <typename F>
  void parallel_for(int64_t n, F&& fn) {
    if (n == 1) {
      fn(int64_t{0}, int64_t{1});
      return;
    }
    const int nt = num_threads_;
    run([&](int tid) {
      const int64_t begin = n * tid / nt;
      const int64_t end = n * (tid + 1) / nt;
      if (begin < end) fn(begin, end);
    });
  }

  // Calls fn(begin, end) on ranges of at most `grain` items of [0, n), handed out in order to whichever thread asks
  // next, so a thread slowed down (another process, a noisy neighbour on a VM) takes fewer of them. A thread may be
  // called several times; use it only where the result cannot depend on which thread runs which range.
  template <typename F>
  void parallel_for_dynamic(int64_t n, int64_t grain, F&& fn) {
    if (n <= grain) {
      if (n > 0) fn(int64_t{0}, n);
      return;
    }
    if (num_threads_ == 1) {
      for (int64_t begin = 0; begin < n; begin += grain) fn(begin, begin + grain < n ? begin + grain : n);
      return;
    }
    std::atomic<int64_t> next{0};
    run([&](int) {
      for (int64_t begin = next.fetch_add(grain, std::memory_order_relaxed); begin < n;
           begin = next.fetch_add(grain, std::memory_order_relaxed))
        fn(begin, begin + grain < n ? begin + grain : n);
    });
  }

  // The default thread count: the number of cores this process may use.
  static int default_num_threads();

 private:
  using RawFn = void (*)(void*, int);
  void run_raw(RawFn fn, void* ctx);
  void worker_loop(int tid);
  // Runs fn(ctx, tid), recording an exception instead of letting it escape the thread.
  void call_catching(int tid);

  int num_threads_;
  std::vector<std::thread> workers_;
  RawFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  struct alignas(64) BarrierFlag {
    std::atomic<uint64_t> arrivals{0};  // barriers this thread has reached in the current run
  };
  std::vector<BarrierFlag> barrier_flags_;  // [num_threads_], reset at the start of every run
  std::atomic<bool> run_failed_{false};     // a thread of the current run threw: barriers stop waiting
  std::mutex error_mutex_;            // guards first_error_ (taken only when a job throws)
  std::exception_ptr first_error_;    // the first exception of the current run, rethrown by run_raw
};

}  // namespace pagoda
