// The library's search key: the mean of the prompt's token-embedding rows (the model's own, no second model),
// L2-normalised, so a dot product is the cosine similarity. Costs one row read per token.
#pragma once

#include <span>
#include <vector>

#include "model/model.h"

namespace pagoda::warmstart {

std::vector<float> embed_prompt(const Model& model, std::span<const int32_t> tokens);  // [n_embd], unit length

float cosine(std::span<const float> a, std::span<const float> b);  // of unit vectors: their dot product

// target - source, element by element: what a target-aware projector reads (projector.h).
std::vector<float> embedding_difference(std::span<const float> target, std::span<const float> source);

}  // namespace pagoda::warmstart
