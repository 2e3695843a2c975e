// What this CPU offers, and which kernel set (ISA) the process runs. Every kernel family (matmul, paged attention)
// asks default_kernel_isa() once, so one process runs one kernel set. PAGODA_ISA=avx512|avx2|portable forces a set
// (to compare them on one machine); a value the CPU cannot run, or an unknown one, is an error that
// check_kernel_isa_env() reports and the kernels never see (they then fall back to the widest set).
#pragma once

#include <optional>
#include <string>

#include "util/result.h"

namespace pagoda {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_vnni = false, avx512_bf16 = false, avx_vnni = false;
};

// Detected once (CPUID).
const CpuFeatures& cpu_features();
// The present flags among those above, space-separated, in /proc/cpuinfo spelling ("avx2 fma f16c avx512f ...").
std::string cpu_flags_string(const CpuFeatures& f);
// The CPU's brand string ("AMD EPYC 9454P 48-Core Processor"); empty when CPUID has none.
std::string cpu_model_name();
// Bytes of one core's L1 data cache as the C library reports it (sysconf), read once; 32 KiB when it reports none
// or a value outside 16-256 KiB.
long cpu_l1d_bytes();

enum class KernelIsa { kPortable, kAvx2, kAvx512 };
const char* kernel_isa_name(KernelIsa isa);  // "portable", "avx2", "avx512"
// The instructions a kernel set needs: avx2 = AVX2 + FMA + F16C; avx512 = that + AVX-512 F/BW/VL/DQ.
bool cpu_can_run(KernelIsa isa);
// The widest set this CPU runs.
KernelIsa widest_kernel_isa();
// PAGODA_ISA read and checked: nullopt when unset or empty; an error naming the value when it is unknown or needs
// instructions this CPU lacks.
Result<std::optional<KernelIsa>> kernel_isa_from_env();
// The set the kernels use: PAGODA_ISA when valid, else the widest.
KernelIsa default_kernel_isa();
// "the kernel set in use, and why": "avx512 (widest on this CPU)" or "avx2 (PAGODA_ISA)".
std::string describe_kernel_isa();

}  // namespace pagoda
