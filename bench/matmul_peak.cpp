// The float matmul kernel's rate against the core's FMA peak (docs/PERFORMANCE.md, issue #12): one thread, an F16
// weight matrix ROWS x COLS times TOKENS activations through the kernel set of each ISA this CPU runs (the same
// matmul_rows_* the model uses), median of 7 runs, in GFLOP/s (2 per multiply-add); and the peak of that ISA's
// FMA: 12 independent vfmadd231ps chains, zmm and ymm, so the ratio says how close the kernel runs to the core.
// Usage: pagoda_matmul_peak ROWS COLS TOKENS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu_features.h"
#include "util/fp16.h"
#include "util/rng.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GFLOP/s of 12 chains of fused multiply-adds on 512-bit, then 256-bit vectors (each function compiled for its ISA,
// run only where the CPU has it). R: the register prefix ("zmm" or "ymm"); LANES: floats per vector.
constexpr long kFmaIterations = 50000000;

#define PAGODA_FMA(R, n) "vfmadd231ps %%" R "1, %%" R "1, %%" R #n "\n"
#define PAGODA_FMA_PEAK(R, LANES)                                                                                  \
  const auto t0 = Clock::now();                                                                                  \
  asm volatile("vxorps %%xmm1, %%xmm1, %%xmm1\n"                                                                 \
               "mov %0, %%rcx\n"                                                                                 \
               "1:\n" PAGODA_FMA(R, 2) PAGODA_FMA(R, 3) PAGODA_FMA(R, 4) PAGODA_FMA(R, 5) PAGODA_FMA(R, 6)       \
                   PAGODA_FMA(R, 7) PAGODA_FMA(R, 8) PAGODA_FMA(R, 9) PAGODA_FMA(R, 10) PAGODA_FMA(R, 11)          \
                       PAGODA_FMA(R, 12) PAGODA_FMA(R, 13) "dec %%rcx\n jnz 1b\n"                              \
               :                                                                                                 \
               : "r"(kFmaIterations)                                                                             \
               : "rcx", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
                 "xmm12", "xmm13", "memory");                                                                    \
  return 12.0 * kFmaIterations * (LANES) * 2 / seconds_since(t0) * 1e-9

__attribute__((target("avx512f"))) double fma_peak_512() { PAGODA_FMA_PEAK("zmm", 16); }
__attribute__((target("avx2,fma"))) double fma_peak_256() { PAGODA_FMA_PEAK("ymm", 8); }

#undef PAGODA_FMA_PEAK
#undef PAGODA_FMA

}  // namespace

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROWS COLS TOKENS\n", argv[0]);
    return 2;
  }
  const int64_t rows = std::atoll(argv[1]), cols = std::atoll(argv[2]), tokens = std::atoll(argv[3]);
  if (rows <= 0 || cols <= 0 || tokens <= 0 || rows * cols > (int64_t{1} << 30)) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  Rng rng(1);
  std::vector<uint16_t> w(static_cast<size_t>(rows * cols));  // [rows][cols] f16
  for (auto& v : w) v = f32_to_f16(static_cast<float>(rng.next_double() - 0.5));
  std::vector<float> x(static_cast<size_t>(tokens * cols)), y(static_cast<size_t>(tokens * rows));
  for (auto& v : x) v = static_cast<float>(rng.next_double() - 0.5);
  WeightMatrix m;
  m.data = reinterpret_cast<const uint8_t*>(w.data());
  m.type = GgmlType::F16;
  m.cols = cols;
  m.rows = rows;
  m.row_bytes = static_cast<size_t>(cols) * 2;
  struct Set {
    KernelIsa isa;
    kernels::MatmulRowsFn fn;
    int width;
  };
  for (const Set& s : {Set{KernelIsa::kAvx512, kernels::matmul_rows_avx512, 512},
                       Set{KernelIsa::kAvx2, kernels::matmul_rows_avx2, 256}}) {
    if (!cpu_can_run(s.isa)) continue;
    std::vector<double> t;
    for (int rep = 0; rep < 7; ++rep) {
      const auto t0 = Clock::now();
      s.fn(m, x.data(), tokens, y.data(), 0, rows);
      t.push_back(seconds_since(t0));
    }
    std::sort(t.begin(), t.end());
    const double rate = 2.0 * static_cast<double>(rows * cols * tokens) / t[3] * 1e-9;
    const double peak = s.width == 512 ? fma_peak_512() : fma_peak_256();
    std::printf("%s: F16 %lld x %lld, %lld tokens: %.1f GFLOP/s; FMA peak %.1f GFLOP/s; %.0f%% of peak\n",
                kernel_isa_name(s.isa), static_cast<long long>(rows), static_cast<long long>(cols),
                static_cast<long long>(tokens), rate, peak, 100 * rate / peak);
  }
  return 0;
}
