// The rag mode's store: snippets embedded with the served model's own token embeddings (the mean of the
// embedding rows of the snippet's tokens, L2-normalised: cheap, no second model) and searched exactly by cosine
// similarity. Exact search over 1,000 vectors is a matrix-vector product (well under a millisecond at n_embd 768),
// so no approximate index is needed at this size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace pagoda::anchorbench {

class SnippetStore {
 public:
  // Embeds every text (tokenized without BOS).
  SnippetStore(const Model& model, std::vector<std::string> texts);

  struct Hit {
    int32_t index = -1;
    float similarity = 0;
  };
  // The most similar snippet to `query` (ties: the lowest index).
  Hit nearest(const std::string& query) const;
  const std::string& text(int32_t i) const { return texts_[i]; }
  int32_t size() const { return static_cast<int32_t>(texts_.size()); }

 private:
  std::vector<float> embed(const std::string& text) const;  // [n_embd], unit length (zero for no tokens)

  const Model& model_;
  std::vector<std::string> texts_;
  int64_t dim_ = 0;
  std::vector<float> vectors_;  // [n, dim]
};

}  // namespace pagoda::anchorbench
