// llama.cpp's greedy goldens (../shared/golden/*-greedy.jsonl): per line a prompt, its token ids and the greedy
// steps, each with the top-5 (token id, logit) pairs, best first.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace pagoda {

struct GoldenStep {
  std::vector<std::pair<int32_t, float>> top;  // top-5 (id, logit), best first
};

struct GoldenCase {
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  std::vector<GoldenStep> steps;
};

inline std::vector<GoldenCase> load_golden_jsonl(const std::string& path) {
  std::vector<GoldenCase> cases;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    GoldenCase c;
    c.prompt = j.at("prompt").get<std::string>();
    c.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    for (const auto& s : j.at("steps")) {
      GoldenStep step;
      for (const auto& p : s.at("top")) step.top.emplace_back(p.at(0).get<int32_t>(), p.at(1).get<float>());
      c.steps.push_back(std::move(step));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace pagoda
