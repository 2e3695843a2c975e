#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pagoda {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, DynamicParallelForCoversEveryIndexOnceInRangesOfAtMostTheGrain) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 5, 7, 1000}) {
      for (int64_t grain : {1, 2, 3, 7, 2000}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<int64_t> widest{0};
        pool.parallel_for_dynamic(n, grain, [&](int64_t b, int64_t e) {
          ASSERT_LT(b, e);
          int64_t w = widest.load();
          while (e - b > w && !widest.compare_exchange_weak(w, e - b)) {
          }
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int64_t i = 0; i < n; ++i)
          EXPECT_EQ(hits[i].load(), 1) << threads << " threads, n " << n << ", grain " << grain;
        EXPECT_LE(widest.load(), std::min(n, grain) == n ? n : grain);
      }
    }
  }
}

TEST(ThreadPool, RunCallsEveryThreadAndManyRoundsComplete) {
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 2000; ++round) pool.run([&](int tid) { total += tid + 1; });
  EXPECT_EQ(total.load(), 2000 * (1 + 2 + 3 + 4));
}

// Before the fix a throw on a worker thread called std::terminate; on the caller it left the workers running
// against a dead stack frame.
TEST(ThreadPool, ExceptionOnAWorkerIsRethrownOnTheCaller) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    const int thrower = threads - 1;  // a worker thread whenever there is one
    std::atomic<int> finished{0};
    try {
      pool.run([&](int tid) {
        if (tid == thrower) throw std::runtime_error("job " + std::to_string(tid) + " failed");
        ++finished;
      });
      ADD_FAILURE() << "no exception with " << threads << " threads";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "job " + std::to_string(thrower) + " failed");
    }
    EXPECT_EQ(finished.load(), threads - 1) << "every other thread finished before the rethrow";
    // The pool is still usable, and a later clean run does not rethrow the old error.
    std::atomic<int> calls{0};
    EXPECT_NO_THROW(pool.run([&](int) { ++calls; }));
    EXPECT_EQ(calls.load(), threads);
  }
}

TEST(ThreadPool, ExceptionsOnEveryThreadRethrowExactlyOne) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round)
    EXPECT_THROW(pool.parallel_for(100, [](int64_t, int64_t) { throw std::logic_error("boom"); }), std::logic_error);
  std::atomic<int64_t> covered{0};
  pool.parallel_for(100, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered.load(), 100);
}

TEST(ThreadPool, BarrierMakesEveryThreadsWritesVisibleToAllAfterIt) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    constexpr int kPhases = 200;
    std::vector<int> slot(threads, -1);  // plain ints: the barrier alone orders them
    std::atomic<int> wrong{0};
    for (int round = 0; round < 3; ++round) {
      pool.run([&](int tid) {
        for (int phase = 0; phase < kPhases; ++phase) {
          slot[tid] = phase;
          pool.barrier(tid);
          for (int other = 0; other < threads; ++other)
            if (slot[other] != phase) wrong++;
          pool.barrier(tid);  // nobody writes the next phase before every thread has read this one
        }
      });
    }
    EXPECT_EQ(wrong.load(), 0) << threads << " threads";
  }
}

TEST(ThreadPool, AThreadThrowingBeforeABarrierReleasesTheOthersAndTheRunRethrowsItsError) {
  ThreadPool pool(3);
  for (int thrower : {0, 1, 2}) {
    try {
      pool.run([&](int tid) {
        if (tid == thrower) throw std::runtime_error("thread " + std::to_string(tid));
        pool.barrier(tid);  // would wait forever for the thread that threw
        pool.barrier(tid);
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "thread " + std::to_string(thrower));
    }
    // The pool is usable afterwards, barriers included (their counts start again).
    std::atomic<int> passed{0};
    pool.run([&](int tid) {
      pool.barrier(tid);
      passed++;
    });
    EXPECT_EQ(passed.load(), 3);
  }
}

TEST(ThreadPool, ABarrierCallsItsIdleStepWhileItWaitsAndStopsOnceTheStepHasNothingLeft) {
  ThreadPool pool(2);
  struct Idle {
    int calls = 0, limit = 0;
    static bool step(void* self) {
      Idle& i = *static_cast<Idle*>(self);
      return ++i.calls < i.limit;
    }
  };
  Idle first, second;
  first.limit = 1 << 30;  // always has more: called for as long as its thread waits
  second.limit = 3;       // done at its third call
  int written = 0, seen = 0;
  pool.run([&](int tid) {
    if (tid == 0) {
      pool.barrier(0, Idle::step, &first);  // thread 1 arrives 20 ms later
      seen = written;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      pool.barrier(0);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      written = 7;  // before thread 1's first barrier; thread 0 reads it after its own
      pool.barrier(1);
      pool.barrier(1, Idle::step, &second);  // thread 0 arrives 20 ms later
    }
  });
  EXPECT_GT(first.calls, 0);   // it waited (thread 1 arrived 20 ms later) and was called while it did
  EXPECT_LE(second.calls, 3);  // and a step that says it is done is not called again, however long the wait
  EXPECT_EQ(seen, 7) << "thread 0's barrier returned before thread 1 arrived";
}

}  // namespace pagoda
