// The rag mode's store: each snippet is indexed under its first sentence (its key: short keys keep a long memory
// findable, where the mean over a whole long text drowns any one query), embedded with the served model's own token
// embeddings (the mean of the key tokens' embedding rows, L2-normalised: cheap, no second model), searched exactly
// by cosine similarity, and the whole snippet is returned. Exact search over 1,000 vectors is a matrix-vector product (well under a millisecond at n_embd 768),
// so no approximate index is needed at this size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace pagoda::anchorbench {

// The text up to and including its first '.', or all of it.
std::string first_sentence(const std::string& text);

class SnippetStore {
 public:
  // Embeds every text's key (tokenized without BOS).
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
