// The scale searches ggml's reference quantizers run on each group of a block (what llama-quantize does without an
// importance matrix): given a group's values, pick the scale (and min) whose rounded levels reproduce the values
// with the least weighted squared error among a small set of candidates. Pure functions of their inputs; the
// block encoders in io/quantize_k_quants.cpp and io/quantize_iq4.cpp quantize the chosen scales and pack the levels.
#pragma once

#include <cmath>
#include <cstdint>

namespace pagoda {

// Groups whose largest magnitude is below this are all zero (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Round to the nearest integer, ties to even (ggml's nearest_int).
inline int round_to_int(float v) { return static_cast<int>(std::nearbyint(v)); }

// Symmetric levels l in -nmax..nmax-1, x ~ scale * l: starting from scale max / -nmax (max: the value of largest
// magnitude, with its sign), tries the 18 neighbouring scales (nmax +- 0.1 k) / -max and keeps the one whose
// weighted least-squares refit explains most of the values. Weights x^2. Writes l + nmax to levels[]; returns the
// scale (0 for an all-zero group). llama.cpp: make_qx_quants with rmse_type 1 (Q6_K).
float fit_symmetric_scale(int n, int nmax, const float* x, uint8_t* levels);

// As fit_symmetric_scale's start, then moves one level at a time while that improves the weighted (x^2) fit,
// up to 5 sweeps. Writes l + nmax; returns the refitted scale. llama.cpp: make_q3_quants with do_rmse (Q3_K).
float fit_symmetric_scale_by_level_moves(int n, int nmax, const float* x, uint8_t* levels);

// Levels l in 0..nmax with a scale and a min (x ~ scale * l - neg_min, neg_min >= 0): tries the scales
// (nmax + rmin + rdelta * k) / (max - min) for k = 0..nstep, refitting scale and min by weighted least squares each
// time, and keeps the pair with the smallest weighted error (absolute when abs_error, else squared). Writes the
// levels; stores -min (>= 0) in *neg_min; returns the scale. llama.cpp: make_qkx2_quants (Q2_K, Q4_K, Q5_K).
float fit_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* levels, float* neg_min,
                        float rmin, float rdelta, int nstep, bool abs_error);

// Index of the grid value nearest to v (grid: 16 ascending values; a tie goes to the upper one).
int nearest_grid_index(const int8_t* grid, float v);

// Scale d for x ~ d * grid[index] on a 16-value non-linear grid: the least-squares d of the levels at scale
// max / grid[0], then of the levels at each of the 2 * ntry + 1 scales max / (grid[0] + k), keeping the best.
// Weights x^2. Returns 0 for an all-zero group. llama.cpp: the scale search of quantize_row_iq4_nl_impl
// (IQ4_NL, IQ4_XS; llama-quantize runs it with ntry 7).
float fit_grid_scale(int n, const int8_t* grid, const float* x, int ntry);

}  // namespace pagoda
