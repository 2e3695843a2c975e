#include "io/quant_scale_search.h"

#include <algorithm>

namespace pagoda {
namespace {

// The value of largest magnitude, with its sign, and that magnitude.
void signed_max(int n, const float* x, float* max, float* amax) {
  *max = 0.0f;
  *amax = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > *amax) {
      *amax = std::fabs(x[i]);
      *max = x[i];
    }
}

int symmetric_level(float v, int nmax) { return std::clamp(round_to_int(v), -nmax, nmax - 1); }

}  // namespace

float fit_symmetric_scale(int n, int nmax, const float* x, uint8_t* levels) {
  float max, amax;
  signed_max(n, x, &max, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + n, uint8_t{0});
    return 0.0f;
  }
  // Weighted sums of the fit x ~ s * l at inverse scale `inv`: s = sum(w x l) / sum(w l^2); the explained part of
  // the error is s * sum(w x l).
  auto sums = [&](float inv, float* sum_xl, float* sum_l2) {
    *sum_xl = *sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = symmetric_level(inv * x[i], nmax);
      const float w = x[i] * x[i];
      *sum_xl += w * x[i] * l;
      *sum_l2 += w * l * l;
    }
  };
  auto keep_levels = [&](float inv) {
    for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(symmetric_level(inv * x[i], nmax) + nmax);
  };
  float inv = -nmax / max;
  float sum_xl, sum_l2;
  sums(inv, &sum_xl, &sum_l2);
  keep_levels(inv);
  float scale = sum_l2 != 0.0f ? sum_xl / sum_l2 : 0.0f;
  float best = scale * sum_xl;
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    inv = -(nmax + 0.1f * k) / max;
    sums(inv, &sum_xl, &sum_l2);
    if (sum_l2 > 0 && sum_xl * sum_xl > best * sum_l2) {
      keep_levels(inv);
      scale = sum_xl / sum_l2;
      best = scale * sum_xl;
    }
  }
  return scale;
}

float fit_symmetric_scale_by_level_moves(int n, int nmax, const float* x, uint8_t* levels) {
  float max, amax;
  signed_max(n, x, &max, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(levels, levels + n, uint8_t{0});
    return 0.0f;
  }
  const float inv = -nmax / max;
  int l[256];
  float sum_xl = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    l[i] = symmetric_level(inv * x[i], nmax);
    const float w = x[i] * x[i];
    sum_xl += w * x[i] * l[i];
    sum_l2 += w * l[i] * l[i];
  }
  // Move level i to its best value for the scale the other levels fit, if that improves sum_xl^2 / sum_l2.
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float xl = sum_xl - w * x[i] * l[i];
      if (xl <= 0) continue;
      float l2 = sum_l2 - w * l[i] * l[i];
      const int moved = symmetric_level(x[i] * l2 / xl, nmax);
      if (moved == l[i]) continue;
      xl += w * x[i] * moved;
      l2 += w * moved * moved;
      if (l2 > 0 && xl * xl * sum_l2 > sum_xl * sum_xl * l2) {
        l[i] = moved;
        sum_xl = xl;
        sum_l2 = l2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(l[i] + nmax);
  return sum_l2 > 0.0f ? sum_xl / sum_l2 : 0.0f;
}

float fit_scale_and_min(int n, int nmax, const float* x, const float* weights, uint8_t* levels, float* neg_min,
                        float rmin, float rdelta, int nstep, bool abs_error) {
  float min = x[0], max = x[0];
  float sum_w = weights[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(levels, levels + n, uint8_t{0});
    *neg_min = -min;
    return 0.0f;
  }
  auto error_of = [&](float diff) { return abs_error ? std::fabs(diff) : diff * diff; };
  float inv = nmax / (max - min);
  float scale = 1 / inv;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    levels[i] = static_cast<uint8_t>(std::clamp(round_to_int(inv * (x[i] - min)), 0, nmax));
    best_error += weights[i] * error_of(scale * levels[i] + min - x[i]);
  }
  uint8_t trial[256];
  for (int k = 0; k <= nstep; ++k) {
    // `min` is the best fit so far: each candidate scale spans the range from it.
    inv = (rmin + rdelta * k + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_to_int(inv * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      sum_l += weights[i] * l;
      sum_l2 += weights[i] * l * l;
      sum_xl += weights[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {  // the min may only lower values: refit the scale alone
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) error += weights[i] * error_of(this_scale * trial[i] + this_min - x[i]);
    if (error < best_error) {
      std::copy(trial, trial + n, levels);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *neg_min = -min;
  return scale;
}

int nearest_grid_index(const int8_t* grid, float v) {
  if (v <= grid[0]) return 0;
  if (v >= grid[15]) return 15;
  int lo = 0, hi = 15;  // grid[lo] <= v < grid[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < grid[mid])
      hi = mid;
    else
      lo = mid;
  }
  return v - grid[hi - 1] < grid[hi] - v ? hi - 1 : hi;
}

float fit_grid_scale(int n, const int8_t* grid, const float* x, int ntry) {
  float max, amax;
  signed_max(n, x, &max, &amax);
  if (amax < kGroupMaxEps) return 0.0f;
  auto sums = [&](float inv, float* sum_qx, float* sum_q2) {
    *sum_qx = *sum_q2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float q = grid[nearest_grid_index(grid, inv * x[i])];
      const float w = x[i] * x[i];
      *sum_qx += w * q * x[i];
      *sum_q2 += w * q * q;
    }
  };
  float d = ntry > 0 ? -max / grid[0] : max / grid[0];
  float sum_qx, sum_q2;
  sums(1 / d, &sum_qx, &sum_q2);
  d = sum_q2 > 0 ? sum_qx / sum_q2 : 0.0f;
  float best = d * sum_qx;
  for (int k = -ntry; k <= ntry; ++k) {
    sums((k + grid[0]) / max, &sum_qx, &sum_q2);
    if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
      d = sum_qx / sum_q2;
      best = d * sum_qx;
    }
  }
  return d;
}

}  // namespace pagoda
