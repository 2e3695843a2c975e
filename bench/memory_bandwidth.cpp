// Read bandwidth of this machine, the ceiling for memory-bound decode: T threads each sum their slice of a
// 1 GiB buffer (AVX-512 loads when available); reports the median GB/s of several passes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "util/thread_pool.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : pagoda::ThreadPool::default_num_threads();
  const size_t bytes = size_t{1} << 30;
  std::vector<float> buf(bytes / sizeof(float), 1.0f);
  pagoda::ThreadPool pool(threads);
  std::vector<double> rates;
  std::vector<float> sums(threads * 16);
  for (int pass = 0; pass < 9; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int tid) {
      const size_t n = buf.size() / threads;
      const float* p = buf.data() + n * tid;
      float acc[16] = {};
      for (size_t i = 0; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; ++l) acc[l] += p[i + l];
      std::copy(acc, acc + 16, sums.begin() + tid * 16);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) rates.push_back(bytes / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("threads %d: read bandwidth %.1f GB/s (median of %zu passes; checksum %g)\n", threads,
              rates[rates.size() / 2], rates.size(), static_cast<double>(sums[0]));
  return 0;
}
