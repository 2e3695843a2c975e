#pragma once

#include <cstdint>

namespace pagoda {

// LayerNorm with an affine part: out[t, i] = (x[t, i] - mean_t) / sqrt(var_t + eps) * weight[i] + bias[i], where mean
// and variance are over i < n. x, out: [num_tokens, n] (may alias); weight, bias: [n]. Mean and variance accumulate
// in double and the scale is taken in f32, as ggml_norm does.
void layer_norm(const float* x, const float* weight, const float* bias, int64_t num_tokens, int64_t n, float eps,
                float* out);

}  // namespace pagoda
