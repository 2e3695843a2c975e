#pragma once

#include <cstdint>

namespace pagoda {

// SwiGLU: gate[i] = silu(gate[i]) * up[i] for i < n. silu(x) = x / (1 + exp(-x)).
void silu_mul(float* gate, const float* up, int64_t n);

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
