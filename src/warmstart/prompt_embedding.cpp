#include "warmstart/prompt_embedding.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.h"

namespace pagoda::warmstart {

std::vector<float> embed_prompt(const Model& model, std::span<const int32_t> tokens) {
  const int64_t E = model.hparams().n_embd;
  std::vector<double> sum(E, 0.0);
  std::vector<float> row(E);
  for (int32_t t : tokens) {
    dequantize_row(model.weights().token_embd, t, row.data());
    for (int64_t i = 0; i < E; ++i) sum[i] += row[i];
  }
  double norm = 0;
  for (double x : sum) norm += x * x;
  norm = std::sqrt(norm);
  std::vector<float> out(E, 0.0f);
  if (norm > 0)
    for (int64_t i = 0; i < E; ++i) out[i] = static_cast<float>(sum[i] / norm);
  return out;
}

float cosine(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(s);
}

std::vector<float> embedding_difference(std::span<const float> target, std::span<const float> source) {
  std::vector<float> d(std::min(target.size(), source.size()));
  for (size_t c = 0; c < d.size(); ++c) d[c] = target[c] - source[c];
  return d;
}

}  // namespace pagoda::warmstart
