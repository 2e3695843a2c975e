// Encoders of one 256-element super-block of each K-quant type, choosing scales the way ggml's reference
// quantizers do (quantize_row_q*_K_ref: what llama-quantize writes without an importance matrix):
//   Q2_K  16 groups of 16, 2-bit levels with a scale and a min per group: fit_scale_and_min (weights |x|,
//         absolute error), scales and mins to 4 bits against the super-block's d and dmin.
//   Q3_K  16 groups of 16, symmetric 3-bit levels: fit_symmetric_scale_by_level_moves, scales to 6 bits.
//   Q4_K  8 groups of 32, 4-bit levels with a scale and a min: fit_scale_and_min (weights rms + |x|), 6-bit scales.
//   Q5_K  as Q4_K with 5-bit levels.
//   Q6_K  16 groups of 16, symmetric 6-bit levels: fit_symmetric_scale, scales to int8.
// The levels are then recomputed against the quantized group scales, and packed as io/quant_blocks.h lays out.
#pragma once

#include "io/quant_blocks.h"

namespace pagoda {

void quantize_block_q2_k(const float* x, BlockQ2_K& b);
void quantize_block_q3_k(const float* x, BlockQ3_K& b);
void quantize_block_q4_k(const float* x, BlockQ4_K& b);
void quantize_block_q5_k(const float* x, BlockQ5_K& b);
void quantize_block_q6_k(const float* x, BlockQ6_K& b);

}  // namespace pagoda
