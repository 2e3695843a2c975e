// Reads a generation request from JSON (a `pagoda batch` input line now, an HTTP body next). Every field is
// type- and range-checked; an unknown field is an error that names it, so typos do not pass silently.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/request.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda {

// Defaults follow the OpenAI API: temperature 1, top_p 1, no top-k, max_tokens 16, n 1.
// Fields: prompt (string) or prompt_ids (token ids), max_tokens, temperature, top_p, top_k, min_p, seed, stop
// (string or list of strings), n, logprobs (0..20), presence_penalty, frequency_penalty, repetition_penalty,
// ignore_eos, priority, cache_salt; "id" is the caller's and is not read here.
Result<GenerationRequest> request_from_json(const nlohmann::json& body, const Tokenizer& tokenizer);

}  // namespace pagoda
