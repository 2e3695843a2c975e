// Rotary position embedding, applied in place to the heads of one token.
#pragma once

#include <cstdint>

namespace pagoda {

enum class RopeType {
  kNormal,  // rotates adjacent pairs (x[2i], x[2i+1]): GGUF llama models (their Q/K rows are permuted for it)
  kNeox,    // rotates (x[i], x[i + n_rot/2]): GPT-NeoX style, used by e.g. Qwen2 and Phi-3 GGUFs
};

struct RopeParams {
  RopeType type = RopeType::kNormal;
  int64_t n_rot = 0;  // rotated dimensions per head (<= head_dim); the rest are left alone
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear position scaling (1 / rope.scaling.factor)
};

// x: [n_heads, head_dim] for the token at `position`.
void rope_apply(const RopeParams& p, int64_t position, int64_t n_heads, int64_t head_dim, float* x);

// The same in two halves, so that a forward pass computes each token's angles once for all its layers and for both
// Q and K (the cos / sin calls were 1-2% of a decode step): cos_out, sin_out [n_rot / 2] of the token at `position`,
// then the rotation with them. rope_apply is exactly these two calls.
void rope_angles(const RopeParams& p, int64_t position, float* cos_out, float* sin_out);
void rope_apply_angles(const RopeParams& p, const float* cos, const float* sin, int64_t n_heads, int64_t head_dim,
                       float* x);

}  // namespace pagoda
