#include "api/render.h"

namespace pagoda {

using json = nlohmann::json;

json sampling_params_json(const GenerationRequest& g) {
  const SamplingParams& s = g.sampling;
  json bias = json::object();
  for (const auto& [id, b] : s.logit_bias) bias[std::to_string(id)] = b;
  return {{"n", g.n},
          {"temperature", s.temperature},
          {"top_p", s.top_p},
          {"top_k", s.top_k > 0 ? s.top_k : -1},
          {"min_p", s.min_p},
          {"seed", g.seed ? json(*g.seed) : json(nullptr)},
          {"stop", g.stop},
          {"max_tokens", g.max_tokens},
          {"ignore_eos", g.ignore_eos},
          {"logprobs", g.logprobs >= 0 ? json(g.logprobs) : json(nullptr)},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"repetition_penalty", s.repetition_penalty},
          {"logit_bias", bias},
          {"structured_outputs", g.grammar ? json(true) : json(nullptr)}};
}

json render_json(const OpenAiRequest& r, const std::string& id, const std::string& model) {
  const json params = sampling_params_json(r.gen);
  auto one = [&](const std::vector<int32_t>& ids, const std::string& rid) {
    return json{{"request_id", rid}, {"token_ids", ids}, {"sampling_params", params}, {"model", model}};
  };
  if (r.endpoint == ApiEndpoint::kChatCompletions) return one(r.gen.prompt, id);
  json out = json::array();
  for (size_t p = 0; p < r.prompts.size(); ++p)
    out.push_back(one(r.prompts[p], r.prompts.size() == 1 ? id : id + "-" + std::to_string(p)));
  return out;
}

}  // namespace pagoda
