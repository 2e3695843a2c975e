#include "kernels/cpu/rms_norm.h"

#include <cmath>

namespace pagoda {

void rms_norm(const float* x, const float* weight, int64_t num_tokens, int64_t n, float eps, float* out) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* xt = x + t * n;
    float* ot = out + t * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xt[i] * xt[i]);
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) ot[i] = (xt[i] * scale) * weight[i];
  }
}

}  // namespace pagoda
