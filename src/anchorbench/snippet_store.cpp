#include "anchorbench/snippet_store.h"

#include <cmath>

#include "kernels/cpu/matmul.h"

namespace pagoda::anchorbench {

std::string first_sentence(const std::string& text) {
  const size_t dot = text.find('.');
  return dot == std::string::npos ? text : text.substr(0, dot + 1);
}

SnippetStore::SnippetStore(const Model& model, std::vector<std::string> texts)
    : model_(model), texts_(std::move(texts)), dim_(model.hparams().n_embd) {
  vectors_.reserve(texts_.size() * dim_);
  for (const std::string& t : texts_) {
    const std::vector<float> v = embed(first_sentence(t));
    vectors_.insert(vectors_.end(), v.begin(), v.end());
  }
}

std::vector<float> SnippetStore::embed(const std::string& text) const {
  std::vector<float> sum(dim_, 0.0f), row(dim_);
  const auto ids = model_.tokenizer().encode(text, /*add_special=*/false, /*parse_special=*/false);
  for (int32_t id : ids) {
    dequantize_row(model_.weights().token_embd, id, row.data());
    for (int64_t i = 0; i < dim_; ++i) sum[i] += row[i];
  }
  double norm = 0;
  for (float x : sum) norm += static_cast<double>(x) * x;
  if (norm > 0)
    for (float& x : sum) x = static_cast<float>(x / std::sqrt(norm));
  return sum;
}

SnippetStore::Hit SnippetStore::nearest(const std::string& query) const {
  const std::vector<float> q = embed(query);
  Hit best;
  for (int32_t i = 0; i < size(); ++i) {
    const float* v = vectors_.data() + static_cast<int64_t>(i) * dim_;
    float dot = 0;
    for (int64_t k = 0; k < dim_; ++k) dot += q[k] * v[k];
    if (best.index < 0 || dot > best.similarity) best = {i, dot};
  }
  return best;
}

}  // namespace pagoda::anchorbench
