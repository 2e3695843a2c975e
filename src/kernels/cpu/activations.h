#pragma once

#include <cstdint>

namespace pagoda {

// SwiGLU: gate[i] = silu(gate[i]) * up[i] for i < n. silu(x) = x / (1 + exp(-x)).
void silu_mul(float* gate, const float* up, int64_t n);

// x[i] += y[i] for i < n.
void add_in_place(float* x, const float* y, int64_t n);

}  // namespace pagoda
