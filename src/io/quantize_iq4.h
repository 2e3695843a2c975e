// Encoders of IQ4_NL (32 elements, one f16 scale) and IQ4_XS (256 elements, 8 groups of 32 with 6-bit scales)
// blocks: each element is the index of the nearest of the 16 non-linear values kIQ4Values at the group's scale,
// the scale chosen by fit_grid_scale over 15 candidates (what llama-quantize's quantize_iq4_nl / quantize_iq4_xs
// do without an importance matrix).
#pragma once

#include "io/quant_blocks.h"

namespace pagoda {

void quantize_block_iq4_nl(const float* x, BlockIQ4_NL& b);
void quantize_block_iq4_xs(const float* x, BlockIQ4_XS& b);

}  // namespace pagoda
