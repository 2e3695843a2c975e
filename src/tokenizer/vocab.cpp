#include "tokenizer/vocab.h"

#include <limits>

namespace pagoda {
namespace {

constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";

// GGUF token types (llama.cpp's llama_token_type) -> attribute bits; unknown values become kUndefined as in
// llama.cpp, which then treats the token like a control token when rendering.
uint32_t attr_from_type(int64_t type) {
  switch (type) {
    case 1: return TokenAttr::kNormal;
    case 2: return TokenAttr::kUnknown;
    case 3: return TokenAttr::kControl;
    case 4: return TokenAttr::kUserDefined;
    case 5: return TokenAttr::kUnused;
    case 6: return TokenAttr::kByte;
    default: return TokenAttr::kUndefined;
  }
}

Result<std::vector<float>> read_float_array(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (!v) return make_error("metadata key '" + key + "' is missing");
  if (!v->is_array()) return make_error("metadata key '" + key + "' is not an array");
  const auto& arr = *std::get<std::shared_ptr<GgufArray>>(v->data);
  if (arr.elem_type != GgufValueType::FLOAT32 && arr.elem_type != GgufValueType::FLOAT64)
    return make_error("metadata key '" + key + "' is an array of " + gguf_value_type_name(arr.elem_type) +
                      ", expected float32");
  std::vector<float> out;
  out.reserve(arr.items.size());
  for (const auto& item : arr.items) out.push_back(static_cast<float>(std::get<double>(item.data)));
  return out;
}

}  // namespace

Result<std::vector<int64_t>> read_int_array(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (!v) return make_error("metadata key '" + key + "' is missing");
  if (!v->is_array()) return make_error("metadata key '" + key + "' is not an array");
  const auto& arr = *std::get<std::shared_ptr<GgufArray>>(v->data);
  std::vector<int64_t> out;
  out.reserve(arr.items.size());
  for (const auto& item : arr.items) {
    if (!item.is_integer())
      return make_error("metadata key '" + key + "' is an array of " + gguf_value_type_name(arr.elem_type) +
                        ", expected integers");
    if (auto* u = std::get_if<uint64_t>(&item.data)) {
      if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return make_error("metadata key '" + key + "' holds an out-of-range value");
      out.push_back(static_cast<int64_t>(*u));
    } else {
      out.push_back(std::get<int64_t>(item.data));
    }
  }
  return out;
}

Result<Vocab> Vocab::from_gguf(const GgufFile& file) {
  auto tokens = file.get_array(kTokensKey, GgufValueType::STRING);
  if (!tokens.ok()) return tokens.error();
  std::vector<std::string> texts;
  texts.reserve((*tokens)->items.size());
  for (const auto& item : (*tokens)->items) texts.push_back(std::get<std::string>(item.data));

  // Scores and types are optional (llama.cpp defaults them to 0 and NORMAL), but when present they must
  // describe every token. llama.cpp only rejects shorter arrays; a longer one is as surely a broken file.
  std::vector<float> scores;
  if (file.has(kScoresKey)) {
    auto s = read_float_array(file, kScoresKey);
    if (!s.ok()) return s.error();
    if (s->size() != texts.size())
      return make_error("metadata key '" + std::string(kScoresKey) + "' has " + std::to_string(s->size()) +
                        " entries but '" + kTokensKey + "' has " + std::to_string(texts.size()));
    scores = std::move(*s);
  }
  std::vector<uint32_t> attrs;
  if (file.has(kTypesKey)) {
    auto t = read_int_array(file, kTypesKey);
    if (!t.ok()) return t.error();
    if (t->size() != texts.size())
      return make_error("metadata key '" + std::string(kTypesKey) + "' has " + std::to_string(t->size()) +
                        " entries but '" + kTokensKey + "' has " + std::to_string(texts.size()));
    attrs.reserve(t->size());
    for (int64_t type : *t) attrs.push_back(attr_from_type(type));
  }
  return from_tokens(std::move(texts), std::move(scores), std::move(attrs));
}

Result<Vocab> Vocab::from_tokens(std::vector<std::string> texts, std::vector<float> scores,
                                 std::vector<uint32_t> attrs) {
  if (texts.empty()) return make_error("metadata key '" + std::string(kTokensKey) + "' is empty");
  if (texts.size() > static_cast<size_t>(std::numeric_limits<TokenId>::max()))
    return make_error("vocabulary of " + std::to_string(texts.size()) + " tokens is too large");
  if (!scores.empty() && scores.size() != texts.size()) return make_error("scores and tokens differ in length");
  if (!attrs.empty() && attrs.size() != texts.size()) return make_error("token types and tokens differ in length");

  Vocab vocab;
  const size_t n = texts.size();
  vocab.scores_ = scores.empty() ? std::vector<float>(n, 0.0f) : std::move(scores);
  vocab.attrs_ = attrs.empty() ? std::vector<uint32_t>(n, TokenAttr::kNormal) : std::move(attrs);
  vocab.texts_ = std::move(texts);
  vocab.index_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string& text = vocab.texts_[i];
    // llama.cpp renames empty tokens so that every token keeps a distinct, findable text.
    if (text.empty()) text = "[EMPTY_" + std::to_string(i) + "]";
    auto [it, inserted] = vocab.index_.emplace(text, static_cast<TokenId>(i));
    // llama.cpp aborts on duplicate texts (its index would lose an id); report it instead.
    if (!inserted)
      return make_error("tokens " + std::to_string(it->second) + " and " + std::to_string(i) + " have the same text '" +
                        text + "'");
  }
  return vocab;
}

}  // namespace pagoda
