#include "kernels/cpu_features.h"

#include <cstdlib>
#include <cstring>
#include <optional>

#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace pagoda {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  // The OS must save the vector registers: YMM state for AVX2, and opmask/ZMM state for AVX-512 (XCR0).
  uint64_t xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool ymm = (xcr0 & 0x6) == 0x6;
  const bool zmm = (xcr0 & 0xe6) == 0xe6;
  if (!ymm) f.fma = f.f16c = false;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = ymm && (b & (1u << 5));
    f.avx512f = zmm && (b & (1u << 16));
    f.avx512dq = zmm && (b & (1u << 17));
    f.avx512bw = zmm && (b & (1u << 30));
    f.avx512vl = zmm && (b & (1u << 31));
    f.avx512_vnni = zmm && (c & (1u << 11));
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx_vnni = ymm && (a & (1u << 4));
    f.avx512_bf16 = zmm && (a & (1u << 5));
  }
#endif
  return f;
}

std::optional<KernelIsa> parse_isa(const char* name) {
  if (std::strcmp(name, "avx512") == 0) return KernelIsa::kAvx512;
  if (std::strcmp(name, "avx2") == 0) return KernelIsa::kAvx2;
  if (std::strcmp(name, "portable") == 0 || std::strcmp(name, "scalar") == 0) return KernelIsa::kPortable;
  return std::nullopt;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::string cpu_flags_string(const CpuFeatures& f) {
  const std::pair<bool, const char*> flags[] = {
      {f.avx2, "avx2"},         {f.fma, "fma"},           {f.f16c, "f16c"},
      {f.avx512f, "avx512f"},   {f.avx512bw, "avx512bw"}, {f.avx512vl, "avx512vl"},
      {f.avx512dq, "avx512dq"}, {f.avx512_vnni, "avx512_vnni"}, {f.avx512_bf16, "avx512_bf16"},
      {f.avx_vnni, "avx_vnni"}};
  std::string out;
  for (const auto& [present, name] : flags)
    if (present) out += (out.empty() ? "" : " ") + std::string(name);
  return out.empty() ? "none of the above" : out;
}

std::string cpu_model_name() {
#if defined(__x86_64__)
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext < 0x80000004u) return {};
  char brand[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    unsigned regs[4];
    __get_cpuid(0x80000002u + i, &regs[0], &regs[1], &regs[2], &regs[3]);
    std::memcpy(brand + 16 * i, regs, sizeof regs);
  }
  std::string s(brand);
  const size_t first = s.find_first_not_of(' ');
  const size_t last = s.find_last_not_of(' ');
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
#else
  return {};
#endif
}

long cpu_l1d_bytes() {
  static const long bytes = [] {
    const long v = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return v >= (16L << 10) && v <= (256L << 10) ? v : 32L << 10;
  }();
  return bytes;
}

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
      return "avx512";
    case KernelIsa::kAvx2:
      return "avx2";
    case KernelIsa::kPortable:
      break;
  }
  return "portable";
}

bool cpu_can_run(KernelIsa isa) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  switch (isa) {
    case KernelIsa::kAvx512:
      return avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
    case KernelIsa::kAvx2:
      return avx2;
    case KernelIsa::kPortable:
      break;
  }
  return true;
}

KernelIsa widest_kernel_isa() {
  for (KernelIsa isa : {KernelIsa::kAvx512, KernelIsa::kAvx2})
    if (cpu_can_run(isa)) return isa;
  return KernelIsa::kPortable;
}

Result<std::optional<KernelIsa>> kernel_isa_from_env() {
  const char* value = std::getenv("PAGODA_ISA");
  if (value == nullptr || *value == '\0') return std::optional<KernelIsa>();
  const std::optional<KernelIsa> isa = parse_isa(value);
  if (!isa) return make_error(std::string("PAGODA_ISA='") + value + "' is not one of avx512, avx2, portable");
  if (!cpu_can_run(*isa))
    return make_error(std::string("PAGODA_ISA=") + value + " needs instructions this CPU lacks (it has: " +
                      cpu_flags_string(cpu_features()) + ")");
  return isa;
}

KernelIsa default_kernel_isa() {
  auto forced = kernel_isa_from_env();
  if (forced.ok() && forced->has_value()) return **forced;
  return widest_kernel_isa();
}

std::string describe_kernel_isa() {
  auto forced = kernel_isa_from_env();
  const bool by_env = forced.ok() && forced->has_value();
  return std::string(kernel_isa_name(default_kernel_isa())) + (by_env ? " (PAGODA_ISA)" : " (widest on this CPU)");
}

}  // namespace pagoda
