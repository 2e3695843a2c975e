#pragma once

#include <cstdint>

namespace pagoda {

// out[t, i] = x[t, i] / sqrt(mean_i(x[t, i]^2) + eps) * weight[i].
// x, out: [num_tokens, n] (may alias); weight: [n]. The sum of squares accumulates in double, like ggml.
void rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out);

}  // namespace pagoda
