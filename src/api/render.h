// The render endpoints routers use to tokenize exactly as the replica does (vLLM's shapes): the token ids pagoda
// would prefill for a request, after the chat template for chat, with its sampling parameters, without running it.
//   POST /v1/completions/render       -> [{"request_id", "token_ids", "sampling_params", "model"}, ...] (one per prompt)
//   POST /v1/chat/completions/render  -> {"request_id", "token_ids", "sampling_params", "model"}
// The body is the endpoint's own (validated the same way: a request that would be a 400 is a 400 here).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "api/openai_request.h"

namespace pagoda {

// vLLM's SamplingParams fields for a parsed request: n, temperature, top_p, top_k (-1: all), min_p, seed (null:
// drawn), stop, max_tokens, ignore_eos, logprobs (null: none), the penalties and logit_bias.
nlohmann::json sampling_params_json(const GenerationRequest& g);

// The render answer of a parsed request; prompt p's request_id is `id`, or `id-p` when there are several prompts.
nlohmann::json render_json(const OpenAiRequest& r, const std::string& id, const std::string& model);

}  // namespace pagoda
