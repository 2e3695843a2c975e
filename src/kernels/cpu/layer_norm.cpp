#include "kernels/cpu/layer_norm.h"

#include <cmath>

namespace pagoda {

void layer_norm(const float* x, const float* weight, const float* bias, int64_t num_tokens, int64_t n, float eps,
                float* out) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* xt = x + t * n;
    float* ot = out + t * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xt[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    double sum2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float d = xt[i] - mean;
      sum2 += static_cast<double>(d * d);
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum2 / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) ot[i] = ((xt[i] - mean) * scale) * weight[i] + bias[i];
  }
}

}  // namespace pagoda
