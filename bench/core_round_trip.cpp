// How far apart the two cores this process may use are (docs/PERFORMANCE.md, issue #28): a cache line bounced
// between a thread on each, the time of one round trip (one core writes, the other sees it and answers). On a VM
// the two vCPUs may share a core complex (tens of nanoseconds) or sit on different dies (hundreds), and every
// fork / join of the thread pool and every line one thread reads from the other's results pays that.
// Usage: pagoda_core_round_trip [round_trips=200000]
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long trips = argc > 1 ? std::atol(argv[1]) : 200000;
  if (trips <= 0) {
    std::fprintf(stderr, "round_trips must be positive\n");
    return 2;
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
    std::fprintf(stderr, "needs two CPUs\n");
    return 2;
  }
  int cpus[2], found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[found++] = c;
  alignas(64) static std::atomic<long> line{0};  // odd: the first core's turn is done; even: the second's
  std::thread answer([&] {
    pin(cpus[1]);
    for (long i = 0; i < trips; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      line.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin(cpus[0]);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < trips; ++i) {
    line.store(2 * i + 1, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / trips;
  answer.join();
  std::printf("CPUs %d and %d: a cache line's round trip %.0f ns\n", cpus[0], cpus[1], ns);
  return 0;
}
