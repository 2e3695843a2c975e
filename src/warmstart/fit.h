// `pagoda warmstart fit`: summaries of both prompts of every training pair (attention matching, kv_summary.h),
// then the projector's ridge regression (projector.h). Deterministic: fixed order, no randomness, one thread's
// reduction order in the solves.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/model.h"
#include "util/result.h"
#include "warmstart/warm_start_maps.h"

namespace pagoda::warmstart {

struct TextPair {
  std::string source;
  std::string target;
};

struct FitOptions {
  SummaryOptions summary;
  ProjectorForm form = ProjectorForm::kShared;
  double gamma = 1e-2;
  int64_t target_features = 8;  // kTargetAware: k, the embedding-difference directions it reads
  int threads = 1;
};

struct FitReport {
  int64_t pairs_used = 0;
  int64_t pairs_skipped = 0;  // a prompt shorter than m + 1 tokens
  double seconds = 0;
};

// progress(done, total) is called after each pair.
Result<WarmStartMaps> fit_maps(const Model& model, const std::vector<TextPair>& pairs, const FitOptions& options,
                               FitReport& report, const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace pagoda::warmstart
