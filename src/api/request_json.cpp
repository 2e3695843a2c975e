#include "api/request_json.h"

#include <cmath>
#include <limits>
#include <set>

namespace pagoda {
namespace {

using json = nlohmann::json;

Result<double> number_field(const json& body, const char* key, double lo, double hi) {
  const json& v = body.at(key);
  if (!v.is_number()) return make_error(std::string("'") + key + "' must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    return make_error(std::string("'") + key + "' must be between " + json(lo).dump() + " and " + json(hi).dump());
  return d;
}

Result<int64_t> integer_field(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json& v = body.at(key);
  if (!v.is_number_integer()) return make_error(std::string("'") + key + "' must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    return make_error(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                      std::to_string(hi));
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi)
    return make_error(std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                      std::to_string(hi));
  return i;
}

}  // namespace

Result<GenerationRequest> request_from_json(const json& body, const Tokenizer& tokenizer) {
  if (!body.is_object()) return make_error("a request must be a JSON object");
  static const std::set<std::string> known = {"id",
                                              "prompt",
                                              "prompt_ids",
                                              "max_tokens",
                                              "temperature",
                                              "top_p",
                                              "top_k",
                                              "min_p",
                                              "seed",
                                              "stop",
                                              "n",
                                              "logprobs",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "repetition_penalty",
                                              "ignore_eos",
                                              "priority",
                                              "cache_salt"};
  for (const auto& [key, value] : body.items())
    if (!known.count(key)) return make_error("unknown field '" + key + "'");

  GenerationRequest r;
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 1.0f;
  r.sampling.top_k = 0;
  const bool has_text = body.contains("prompt"), has_ids = body.contains("prompt_ids");
  if (has_text == has_ids) return make_error("give exactly one of 'prompt' (text) and 'prompt_ids'");
  if (has_text) {
    if (!body["prompt"].is_string()) return make_error("'prompt' must be a string");
    r.prompt = tokenizer.encode(body["prompt"].get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
  } else {
    if (!body["prompt_ids"].is_array()) return make_error("'prompt_ids' must be an array of token ids");
    for (const auto& v : body["prompt_ids"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= tokenizer.n_vocab())
        return make_error("'prompt_ids' holds a value that is not a token id of this model");
      r.prompt.push_back(static_cast<int32_t>(v.get<int64_t>()));
    }
  }
  if (r.prompt.empty()) return make_error("the prompt is empty");

  auto get_int = [&](const char* key, int64_t lo, int64_t hi, auto& out) -> Status {
    if (!body.contains(key) || body[key].is_null()) return Status::success();
    auto v = integer_field(body, key, lo, hi);
    if (!v.ok()) return v.error();
    out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    return Status::success();
  };
  auto get_num = [&](const char* key, double lo, double hi, float& out) -> Status {
    if (!body.contains(key) || body[key].is_null()) return Status::success();
    auto v = number_field(body, key, lo, hi);
    if (!v.ok()) return v.error();
    out = static_cast<float>(*v);
    return Status::success();
  };
  PAGODA_RETURN_IF_ERROR(get_int("max_tokens", 1, int64_t{1} << 30, r.max_tokens));
  PAGODA_RETURN_IF_ERROR(get_num("temperature", 0.0, 100.0, r.sampling.temperature));
  PAGODA_RETURN_IF_ERROR(get_num("top_p", 0.0, 1.0, r.sampling.top_p));
  if (r.sampling.top_p <= 0.0f) return make_error("'top_p' must be greater than 0");
  int64_t top_k = 0;
  PAGODA_RETURN_IF_ERROR(get_int("top_k", -1, std::numeric_limits<int32_t>::max(), top_k));
  r.sampling.top_k = static_cast<int32_t>(std::max<int64_t>(top_k, 0));
  PAGODA_RETURN_IF_ERROR(get_num("min_p", 0.0, 1.0, r.sampling.min_p));
  PAGODA_RETURN_IF_ERROR(get_num("presence_penalty", -2.0, 2.0, r.sampling.presence_penalty));
  PAGODA_RETURN_IF_ERROR(get_num("frequency_penalty", -2.0, 2.0, r.sampling.frequency_penalty));
  PAGODA_RETURN_IF_ERROR(get_num("repetition_penalty", 1e-3, 100.0, r.sampling.repetition_penalty));
  if (body.contains("seed") && !body["seed"].is_null()) {
    const json& s = body["seed"];
    if (s.is_number_unsigned())
      r.seed = s.get<uint64_t>();
    else if (s.is_number_integer())
      r.seed = static_cast<uint64_t>(s.get<int64_t>());  // negative seeds wrap, as in vLLM's 64-bit seeds
    else
      return make_error("'seed' must be an integer");
  }
  PAGODA_RETURN_IF_ERROR(get_int("n", 1, 128, r.n));
  if (body.contains("logprobs") && !body["logprobs"].is_null()) {
    if (body["logprobs"].is_boolean()) {
      r.logprobs = body["logprobs"].get<bool>() ? 0 : -1;
    } else {
      PAGODA_RETURN_IF_ERROR(get_int("logprobs", 0, 20, r.logprobs));
    }
  }
  PAGODA_RETURN_IF_ERROR(
      get_int("priority", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), r.priority));
  if (body.contains("ignore_eos") && !body["ignore_eos"].is_null()) {
    if (!body["ignore_eos"].is_boolean()) return make_error("'ignore_eos' must be true or false");
    r.ignore_eos = body["ignore_eos"].get<bool>();
  }
  if (body.contains("cache_salt") && !body["cache_salt"].is_null()) {
    if (!body["cache_salt"].is_string()) return make_error("'cache_salt' must be a string");
    r.cache_salt = body["cache_salt"].get<std::string>();
  }
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      if (s.size() > 16) return make_error("'stop' may hold at most 16 strings");
      for (const auto& v : s) {
        if (!v.is_string()) return make_error("'stop' must be a string or a list of strings");
        r.stop.push_back(v.get<std::string>());
      }
    } else {
      return make_error("'stop' must be a string or a list of strings");
    }
    for (const auto& stop : r.stop)
      if (stop.size() > 256) return make_error("a 'stop' string is longer than 256 bytes");
  }
  return r;
}

}  // namespace pagoda
