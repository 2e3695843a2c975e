// Aggregates of a warm-start evaluation: per method over all requests, over high-similarity requests (cosine >
// 0.9, the draft's criteria set) and over hits; the draft's three criteria per projector form, each supported or
// falsified; hit rate and KL against tau; time to first token against prompt length with the crossover; SVG plots.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "warmstart/evaluation.h"

namespace pagoda::warmstart {

nlohmann::ordered_json summarize_eval(const EvalResult& result, double tau, int quality_tokens);
nlohmann::ordered_json request_json(const RequestOutcome& r);
// Four panels: TTFT against prompt length per method; KL distribution (CDF); hit rate and KL over tau;
// compression-only (oracle) against projection error.
std::string eval_plots_svg(const EvalResult& result, const std::string& heading);

}  // namespace pagoda::warmstart
