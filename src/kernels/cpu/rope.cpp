#include "kernels/cpu/rope.h"

#include <cmath>

namespace pagoda {

void rope_apply(const RopeParams& p, int64_t position, int64_t n_heads, int64_t head_dim, float* x) {
  // theta_i = position * freq_scale * base^(-2i/n_rot), built by repeated multiplication in f32 as ggml does,
  // so that pagoda's rotations match llama.cpp's to the last bit where possible.
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  const int64_t half = p.n_rot / 2;
  float theta = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = p.freq_scale * theta;
    const float c = std::cos(angle);
    const float s = std::sin(angle);
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * head_dim;
      const int64_t a = p.type == RopeType::kNormal ? 2 * i : i;
      const int64_t b = p.type == RopeType::kNormal ? 2 * i + 1 : i + half;
      const float x0 = head[a];
      const float x1 = head[b];
      head[a] = x0 * c - x1 * s;
      head[b] = x0 * s + x1 * c;
    }
    theta *= theta_scale;
  }
}

}  // namespace pagoda
