#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

namespace pagoda {

void rope_angles(const RopeParams& p, int64_t position, float* cos_out, float* sin_out) {
  // theta_i = position * freq_scale * base^(-2i/n_rot), built by repeated multiplication in f32 as ggml does,
  // so that pagoda's rotations match llama.cpp's to the last bit where possible.
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
  const int64_t half = p.n_rot / 2;
  float theta = static_cast<float>(position);
  for (int64_t i = 0; i < half; ++i) {
    const float angle = p.freq_scale * theta;
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

void rope_apply_angles(const RopeParams& p, const float* cos, const float* sin, int64_t n_heads, int64_t head_dim,
                       float* x) {
  const int64_t half = p.n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float c = cos[i];
    const float s = sin[i];
    const int64_t a = p.type == RopeType::kNormal ? 2 * i : i;
    const int64_t b = p.type == RopeType::kNormal ? 2 * i + 1 : i + half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * head_dim;
      const float x0 = head[a];
      const float x1 = head[b];
      head[a] = x0 * c - x1 * s;
      head[b] = x0 * s + x1 * c;
    }
  }
}

void rope_apply(const RopeParams& p, int64_t position, int64_t n_heads, int64_t head_dim, float* x) {
  std::vector<float> cos(p.n_rot / 2), sin(p.n_rot / 2);  // off the forward pass (which keeps its own angles)
  rope_angles(p, position, cos.data(), sin.data());
  rope_apply_angles(p, cos.data(), sin.data(), n_heads, head_dim, x);
}

}  // namespace pagoda
