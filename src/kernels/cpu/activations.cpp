#include "kernels/cpu/activations.h"

#include <cmath>

namespace pagoda {
namespace {

void silu_mul_portable(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

using SiluMulFn = void (*)(float*, const float*, int64_t);

SiluMulFn silu_mul_for(KernelIsa isa) { return isa == KernelIsa::kPortable ? silu_mul_portable : silu_mul_avx2; }

}  // namespace

void silu_mul(float* gate, const float* up, int64_t n) {
  static const SiluMulFn fn = silu_mul_for(default_kernel_isa());
  fn(gate, up, n);
}

bool silu_mul_isa(float* gate, const float* up, int64_t n, KernelIsa isa) {
  if (!cpu_can_run(isa)) return false;
  silu_mul_for(isa)(gate, up, n);
  return true;
}

void gelu(GeluKind kind, float* x, int64_t n) {
  if (kind == GeluKind::kExact) {
    constexpr float kInvSqrt2 = 0.70710678118654752f;
    for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
  } else {
    constexpr float kSqrt2OverPi = 0.79788456080286535f;
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i];
      x[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    }
  }
}

void add_in_place(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void add_bias(float* x, const float* bias, int64_t num_tokens, int64_t n) {
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t i = 0; i < n; ++i) x[t * n + i] += bias[i];
}

}  // namespace pagoda
