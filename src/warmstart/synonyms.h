// The synonym paraphrase operator shared by the warm-start data generators (paraphrase_data.h, qa_data.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/rng.h"

namespace pagoda::warmstart {

// Replaces whole-word occurrences of each pair's first word by its second, each occurrence with probability 1/2
// (one draw from `rng` per whole-word occurrence, pairs in order, left to right).
std::string apply_synonyms(const std::string& text, const std::vector<std::pair<std::string, std::string>>& synonyms,
                           Rng& rng);

}  // namespace pagoda::warmstart
