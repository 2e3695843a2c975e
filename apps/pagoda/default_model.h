// The default model: what `pagoda run`, `serve`, `batch`, `bench` and `perplexity` use when no MODEL is given.
// It is SmolLM2-135M-Instruct (Q4_1), which scripts/fetch-model.sh puts in the checkout's ignored .cache/models/.
// The rule, first match wins:
//   1. $PAGODA_MODEL, a model path (file or Hugging Face folder), used as given;
//   2. SmolLM2-135M-Instruct.Q4_1.gguf in $PAGODA_MODEL_CACHE (the folder fetch-model.sh writes when it is set);
//   3. SmolLM2-135M-Instruct.Q4_1.gguf in .cache/models/ beside the build folder that holds this binary
//      (build/pagoda -> .cache/models/ of the checkout).
// When none is there the error says how to get it.
#pragma once

#include <string>

#include "util/result.h"

namespace pagoda::cli {

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// `given` when it is not empty, else the default model's path by the rule above (an Error saying how to get it).
Result<std::string> resolve_model_path(const std::string& given);

}  // namespace pagoda::cli
