// Portable matmul: dequantizes one weight row at a time and reduces each output element with 16 interleaved
// partial sums (the same lane structure as the vector kernels, so results are close to theirs).
#include <vector>

#include "kernels/cpu/matmul.h"

namespace pagoda::kernels {

void matmul_rows_scalar(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                        int64_t row_end) {
  thread_local std::vector<float> row_f32;
  row_f32.resize(w.cols);
  for (int64_t r = row_begin; r < row_end; ++r) {
    dequantize_row(w, r, row_f32.data());
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* xt = x + t * w.cols;
      float lanes[16] = {};
      for (int64_t k = 0; k < w.cols; ++k) lanes[k % 16] += xt[k] * row_f32[k];
      float sum = 0.0f;
      for (float l : lanes) sum += l;
      y[t * w.rows + r] = sum;
    }
  }
}

}  // namespace pagoda::kernels
