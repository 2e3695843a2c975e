#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace pagoda {

// SwiGLU: gate[i] = silu(gate[i]) * up[i] for i < n. silu(x) = x / (1 + exp(-x)), in the process's kernel set: the
// portable set with std::exp, the avx2 and avx512 sets with activations_avx2.cpp's vector exp (within 2 ulp of it).
// Either way each element's value depends only on its inputs, not on n or on where the range starts.
void silu_mul(float* gate, const float* up, int64_t n);
// With an explicit kernel set (tests); false when this CPU lacks it.
bool silu_mul_isa(float* gate, const float* up, int64_t n, KernelIsa isa);
// The AVX2 + FMA build (the avx512 set uses it too), and its exp alone (tests: out[i] = e^x[i]).
void silu_mul_avx2(float* gate, const float* up, int64_t n);
void exp_avx2(const float* x, int64_t n, float* out);

// GELU in place, x[i] = gelu(x[i]) for i < n, in one of its two definitions (docs/architectures.md says which
// family uses which, and why pagoda does not copy llama.cpp's F16 lookup table):
//   exact: x * 0.5 * (1 + erf(x / sqrt(2)))                          (PyTorch "gelu", Pythia)
//   tanh:  x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))    (PyTorch "gelu_new" / "gelu_pytorch_tanh", GPT-2)
enum class GeluKind { kExact, kTanh };
void gelu(GeluKind kind, float* x, int64_t n);

// x[i] += y[i] for i < n.
void add_in_place(float* x, const float* y, int64_t n);

// x[t, i] += bias[i] for t < num_tokens, i < n. x: [num_tokens, n]; bias: [n].
void add_bias(float* x, const float* bias, int64_t num_tokens, int64_t n);

}  // namespace pagoda
