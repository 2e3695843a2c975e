#include "api/request_json.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <set>

#include "api/output_constraint.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

std::string range_text(double lo, double hi) { return json(lo).dump() + " and " + json(hi).dump(); }

Result<double> number_field(const json& body, const char* key, double lo, double hi) {
  const json& v = body.at(key);
  if (!v.is_number()) return make_field_error(key, std::string("'") + key + "' must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    return make_field_error(key, std::string("'") + key + "' must be between " + range_text(lo, hi));
  return d;
}

Result<int64_t> integer_field(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json& v = body.at(key);
  const std::string range = std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                            std::to_string(hi);
  if (!v.is_number_integer()) return make_field_error(key, std::string("'") + key + "' must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) return make_field_error(key, range);
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) return make_field_error(key, range);
  return i;
}

}  // namespace

Result<std::vector<int32_t>> token_ids_from_json(const json& ids, int32_t n_vocab, const std::string& param) {
  if (!ids.is_array()) return make_field_error(param, "'" + param + "' must be an array of token ids");
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (const auto& v : ids) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n_vocab)
      return make_field_error(param, "'" + param + "' holds a value that is not a token id of this model (0 .. " +
                                         std::to_string(n_vocab - 1) + ")");
    out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return out;
}

Result<GenerationRequest> request_from_json(const json& body, const Tokenizer& tokenizer,
                                            const nlohmann::ordered_json* ordered_body) {
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
                                              "cache_salt",
                                              "logit_bias",
                                              "anchor"};
  bool constrained = false;
  for (const auto& [key, value] : body.items()) {
    const bool constraint = std::find(kConstraintFields.begin(), kConstraintFields.end(), key) != kConstraintFields.end();
    constrained = constrained || (constraint && !value.is_null());
    if (!known.count(key) && !constraint) return make_field_error(key, "unknown field '" + key + "'");
  }

  GenerationRequest r;
  const bool has_text = body.contains("prompt"), has_ids = body.contains("prompt_ids");
  if (has_text == has_ids) return make_field_error("prompt", "give exactly one of 'prompt' (text) and 'prompt_ids'");
  if (has_text) {
    if (!body["prompt"].is_string()) return make_field_error("prompt", "'prompt' must be a string");
    r.prompt = tokenizer.encode(body["prompt"].get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
  } else {
    auto ids = token_ids_from_json(body["prompt_ids"], tokenizer.n_vocab(), "prompt_ids");
    if (!ids.ok()) return ids.error();
    r.prompt = std::move(*ids);
  }
  if (r.prompt.empty()) return make_field_error("prompt", "the prompt is empty");
  if (body.contains("anchor")) {
    if (!body["anchor"].is_string() || body["anchor"].get<std::string>().empty())
      return make_field_error("anchor", "'anchor' must be the digest of an active anchor");
    // The anchor's tokens come first and carry the BOS: the prompt's own goes.
    r.anchor = body["anchor"].get<std::string>();
    if (tokenizer.add_bos() && tokenizer.bos() && r.prompt.front() == *tokenizer.bos()) r.prompt.erase(r.prompt.begin());
    if (r.prompt.empty()) return make_field_error("prompt", "the prompt is empty after the anchor");
  }
  PAGODA_RETURN_IF_ERROR(read_generation_fields(body, r));
  if (constrained) {
    auto constraint = read_output_constraint(
        ordered_body && ordered_body->is_object() ? *ordered_body : nlohmann::ordered_json::parse(body.dump()), tokenizer);
    if (!constraint.ok()) return constraint.error();
    r.grammar = *constraint;
  }
  return r;
}

Status read_generation_fields(const json& body, GenerationRequest& r) {
  r.sampling.temperature = 1.0f;
  r.sampling.top_p = 1.0f;
  r.sampling.top_k = 0;
  auto get_int = [&](const char* key, int64_t lo, int64_t hi, auto& out) -> Status {
    if (!field_set(body, key)) return Status::success();
    auto v = integer_field(body, key, lo, hi);
    if (!v.ok()) return v.error();
    out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
    return Status::success();
  };
  auto get_num = [&](const char* key, double lo, double hi, float& out) -> Status {
    if (!field_set(body, key)) return Status::success();
    auto v = number_field(body, key, lo, hi);
    if (!v.ok()) return v.error();
    out = static_cast<float>(*v);
    return Status::success();
  };
  PAGODA_RETURN_IF_ERROR(get_int("max_tokens", 1, int64_t{1} << 30, r.max_tokens));
  PAGODA_RETURN_IF_ERROR(get_num("temperature", 0.0, 100.0, r.sampling.temperature));
  PAGODA_RETURN_IF_ERROR(get_num("top_p", 0.0, 1.0, r.sampling.top_p));
  if (r.sampling.top_p <= 0.0f) return make_field_error("top_p", "'top_p' must be greater than 0");
  int64_t top_k = 0;
  PAGODA_RETURN_IF_ERROR(get_int("top_k", -1, std::numeric_limits<int32_t>::max(), top_k));
  r.sampling.top_k = static_cast<int32_t>(std::max<int64_t>(top_k, 0));
  PAGODA_RETURN_IF_ERROR(get_num("min_p", 0.0, 1.0, r.sampling.min_p));
  PAGODA_RETURN_IF_ERROR(get_num("presence_penalty", -2.0, 2.0, r.sampling.presence_penalty));
  PAGODA_RETURN_IF_ERROR(get_num("frequency_penalty", -2.0, 2.0, r.sampling.frequency_penalty));
  PAGODA_RETURN_IF_ERROR(get_num("repetition_penalty", 1e-3, 100.0, r.sampling.repetition_penalty));
  if (field_set(body, "seed")) {
    const json& s = body["seed"];
    if (s.is_number_unsigned())
      r.seed = s.get<uint64_t>();
    else if (s.is_number_integer())
      r.seed = static_cast<uint64_t>(s.get<int64_t>());  // negative seeds wrap, as in vLLM's 64-bit seeds
    else
      return make_field_error("seed", "'seed' must be an integer");
  }
  PAGODA_RETURN_IF_ERROR(get_int("n", 1, 128, r.n));
  if (field_set(body, "logprobs")) {
    if (body["logprobs"].is_boolean()) {
      r.logprobs = body["logprobs"].get<bool>() ? 0 : -1;
    } else {
      PAGODA_RETURN_IF_ERROR(get_int("logprobs", 0, 20, r.logprobs));
    }
  }
  PAGODA_RETURN_IF_ERROR(
      get_int("priority", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), r.priority));
  if (field_set(body, "ignore_eos")) {
    if (!body["ignore_eos"].is_boolean()) return make_field_error("ignore_eos", "'ignore_eos' must be true or false");
    r.ignore_eos = body["ignore_eos"].get<bool>();
  }
  if (field_set(body, "cache_salt")) {
    if (!body["cache_salt"].is_string()) return make_field_error("cache_salt", "'cache_salt' must be a string");
    r.cache_salt = body["cache_salt"].get<std::string>();
  }
  if (field_set(body, "logit_bias")) {
    const json& lb = body["logit_bias"];
    if (!lb.is_object()) return make_field_error("logit_bias", "'logit_bias' must be an object {\"token id\": bias}");
    if (lb.size() > 1024) return make_field_error("logit_bias", "'logit_bias' may hold at most 1024 tokens");
    for (const auto& [key, value] : lb.items()) {
      int64_t id = -1;
      const auto parsed = std::from_chars(key.data(), key.data() + key.size(), id);
      if (parsed.ec != std::errc() || parsed.ptr != key.data() + key.size() || id < 0 || id > INT32_MAX)
        return make_field_error("logit_bias", "'logit_bias' keys must be token ids, got '" + key + "'");
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100.0 ||
          value.get<double>() > 100.0)
        return make_field_error("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
      r.sampling.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
    }
  }
  if (field_set(body, "stop")) {
    const json& s = body["stop"];
    if (s.is_string()) {
      r.stop.push_back(s.get<std::string>());
    } else if (s.is_array()) {
      if (s.size() > 16) return make_field_error("stop", "'stop' may hold at most 16 strings");
      for (const auto& v : s) {
        if (!v.is_string()) return make_field_error("stop", "'stop' must be a string or a list of strings");
        r.stop.push_back(v.get<std::string>());
      }
    } else {
      return make_field_error("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& stop : r.stop)
      if (stop.size() > 256) return make_field_error("stop", "a 'stop' string is longer than 256 bytes");
  }
  return Status::success();
}

}  // namespace pagoda
