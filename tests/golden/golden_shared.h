// What the golden tests share (one definition, so that the directory compiles as one unit: cmake/unity.cmake).
#pragma once

#include <string>

namespace pagoda {

// ../shared beside the checkout (tests/CMakeLists.txt): llama.cpp's goldens, models and vocabularies.
inline const std::string kShared = PAGODA_SHARED_DIR;
// A greedy step whose top two llama.cpp logits are closer than this is a near-tie: either token is correct there, and
// the comparison of a sequence stops at it.
inline constexpr float kNearTieMargin = 0.02f;

}  // namespace pagoda
