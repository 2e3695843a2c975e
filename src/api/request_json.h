// Reads a generation request from JSON: a `pagoda batch` input line, or the fields an OpenAI-style HTTP body
// shares with it. Every field is type- and range-checked; errors name the field (Error::param).
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
// ignore_eos, priority, cache_salt, logit_bias ({"token id": bias in [-100, 100]}), anchor (the digest of an active
// anchor: the prompt then loses its BOS, which the anchor's tokens carry); "id" is the caller's and is not read here.
// Structured outputs: response_format, json_schema, grammar or guided_choice (api/output_constraint.h);
// ordered_body: the same line parsed keeping its key order (a schema's properties follow it), nullptr: sorted.
// An unknown field is an error that names it, so typos in batch files do not pass silently.
Result<GenerationRequest> request_from_json(const nlohmann::json& body, const Tokenizer& tokenizer,
                                            const nlohmann::ordered_json* ordered_body = nullptr);

// The sampling and control fields every request format shares (all of the above but the prompt and the unknown-
// field check), read into `r` over its defaults. A missing or null field keeps the default.
Status read_generation_fields(const nlohmann::json& body, GenerationRequest& r);

// Whether `body` holds `key` with a value other than null (null reads as "not given", as in the OpenAI API). For
// nlohmann::json and nlohmann::ordered_json alike.
template <class Json>
bool field_set(const Json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

// A prompt given as token ids, checked against the vocabulary; `param` names the field in errors.
Result<std::vector<int32_t>> token_ids_from_json(const nlohmann::json& ids, int32_t n_vocab, const std::string& param);

}  // namespace pagoda
