#include "io/quantize_iq4.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/quant_scale_search.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

constexpr int kScaleTries = 7;  // llama-quantize's ntry: scales max / (kIQ4Values[0] + k), k = -7..7

// The grid indices of 32 values at inverse scale `inv`, packed: element j in the low nibble of qs[j], element
// j + 16 in the high one.
void pack_indices(const float* x, float inv, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) {
    const int lo = nearest_grid_index(kIQ4Values, inv * x[j]);
    const int hi = nearest_grid_index(kIQ4Values, inv * x[j + 16]);
    qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

}  // namespace

void quantize_block_iq4_nl(const float* x, BlockIQ4_NL& b) {
  const float d = fit_grid_scale(32, kIQ4Values, x, kScaleTries);
  b.d = f32_to_f16(d);
  pack_indices(x, d != 0.0f ? 1 / d : 0.0f, b.qs);
}

void quantize_block_iq4_xs(const float* x, BlockIQ4_XS& b) {
  float scale[8], max_scale = 0.0f, amax = 0.0f;
  for (int g = 0; g < 8; ++g) {
    scale[g] = fit_grid_scale(32, kIQ4Values, x + 32 * g, kScaleTries);
    if (std::fabs(scale[g]) > amax) {
      amax = std::fabs(scale[g]);
      max_scale = scale[g];
    }
  }
  // Group scale d * (ls - 32), ls in 0..63: low 4 bits in nibble g of scales_l, high 2 bits at bit 2g of scales_h.
  const float d = -max_scale / 32;
  b.d = f32_to_f16(d);
  const float inv = d != 0.0f ? 1 / d : 0.0f;
  std::memset(b.scales_l, 0, sizeof b.scales_l);
  uint16_t scales_h = 0;
  for (int g = 0; g < 8; ++g) {
    const int l = std::clamp(round_to_int(inv * scale[g]), -32, 31);
    const float dl = d * l;
    pack_indices(x + 32 * g, dl != 0.0f ? 1 / dl : 0.0f, b.qs + 16 * g);
    const int ls = l + 32;
    b.scales_l[g / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (g % 2)));
    scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * g));
  }
  b.scales_h = scales_h;
}

}  // namespace pagoda
