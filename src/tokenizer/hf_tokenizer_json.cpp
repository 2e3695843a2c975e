#include "tokenizer/hf_tokenizer_json.h"

#include <map>
#include <optional>
#include <unordered_map>

namespace pagoda {
namespace {

using json = nlohmann::json;

// GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE_*).
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// The Split regexes of the byte-level tokenizers pagoda knows, as tokenizer.json spells them, with the
// tokenizer.ggml.pre name llama.cpp gives them.
const std::pair<const char*, const char*> kKnownSplits[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+",
     "qwen2"},
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", "gpt-2"},
};

std::string type_of(const json& j) {
  if (!j.is_object()) return "";
  auto t = j.find("type");
  return t != j.end() && t->is_string() ? t->get<std::string>() : "";
}

// A normalizer or pre-tokenizer as a flat list (Sequence flattened; null: empty).
Result<std::vector<const json*>> flatten(const json& j, const char* what) {
  std::vector<const json*> out;
  if (j.is_null()) return out;
  if (!j.is_object()) return make_error(std::string("tokenizer.json: '") + what + "' is not an object");
  const std::string t = type_of(j);
  if (t == "Sequence") {
    const char* list_key = std::string(what) == "normalizer" ? "normalizers" : "pretokenizers";
    auto it = j.find(list_key);
    if (it == j.end() || !it->is_array())
      return make_error(std::string("tokenizer.json: '") + what + "' Sequence has no '" + list_key + "' list");
    for (const auto& item : *it) {
      if (type_of(item) == "Sequence") return make_error(std::string("tokenizer.json: nested '") + what + "' Sequence");
      out.push_back(&item);
    }
    return out;
  }
  out.push_back(&j);
  return out;
}

// A special token named in tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> token_text(const json* config, const char* key) {
  if (config == nullptr || !config->is_object()) return std::nullopt;
  auto it = config->find(key);
  if (it == config->end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return c->get<std::string>();
  }
  return std::nullopt;
}

std::optional<bool> bool_field(const json* j, const char* key) {
  if (j == nullptr || !j->is_object()) return std::nullopt;
  auto it = j->find(key);
  if (it == j->end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

// config.json's bos_token_id / eos_token_id (an integer or a list: the first).
std::optional<int64_t> id_field(const json* j, const char* key) {
  if (j == nullptr || !j->is_object()) return std::nullopt;
  auto it = j->find(key);
  if (it == j->end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) return (*it)[0].get<int64_t>();
  return std::nullopt;
}

// "<0xXX>": SentencePiece's byte-fallback tokens.
bool is_byte_token(const std::string& s) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

namespace {

Result<std::vector<std::pair<std::string, GgufValue>>> read_tokenizer(const HfTokenizerInput& in) {
  const json& tj = *in.tokenizer;
  if (!tj.is_object()) return make_error("tokenizer.json is not a JSON object");
  auto model_it = tj.find("model");
  if (model_it == tj.end() || !model_it->is_object()) return make_error("tokenizer.json has no 'model' object");
  const json& model = *model_it;
  const std::string model_type = type_of(model);
  if (model_type != "BPE")
    return make_error("tokenizer.json model type '" + model_type + "' is not supported (supported: BPE)");
  auto vocab_it = model.find("vocab");
  auto merges_it = model.find("merges");
  if (vocab_it == model.end() || !vocab_it->is_object()) return make_error("tokenizer.json: model.vocab is missing");
  if (merges_it == model.end() || !merges_it->is_array()) return make_error("tokenizer.json: model.merges is missing");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      return make_error(std::string("tokenizer.json: model.") + key + " is not supported");
  }

  // Ids: the vocabulary, then added tokens (which may extend it); padding up to the embedding's rows.
  const int64_t n = in.n_vocab;
  std::vector<std::string> tokens(static_cast<size_t>(n));
  std::vector<bool> present(static_cast<size_t>(n), false);
  std::vector<int32_t> types(static_cast<size_t>(n), kNormal);
  std::unordered_map<std::string, int64_t> ids;
  auto put = [&](const std::string& text, int64_t id, const char* from) -> Status {
    if (id < 0 || id >= n)
      return make_error(std::string("tokenizer.json: ") + from + " token '" + text.substr(0, 64) + "' has id " +
                        std::to_string(id) + ", outside the model's " + std::to_string(n) + " embedding rows");
    tokens[static_cast<size_t>(id)] = text;
    present[static_cast<size_t>(id)] = true;
    ids[text] = id;
    return Status::success();
  };
  for (const auto& [text, id] : vocab_it->items()) {
    if (!id.is_number_integer()) return make_error("tokenizer.json: vocab entry '" + text + "' is not an integer id");
    PAGODA_RETURN_IF_ERROR(put(text, id.get<int64_t>(), "vocab"));
  }
  auto added_it = tj.find("added_tokens");
  if (added_it != tj.end() && added_it->is_array()) {
    for (const auto& a : *added_it) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        return make_error("tokenizer.json: an added_tokens entry lacks an integer 'id' or a string 'content'");
      const std::string text = a["content"].get<std::string>();
      const int64_t id = a["id"].get<int64_t>();
      PAGODA_RETURN_IF_ERROR(put(text, id, "added"));
      const bool special = a.value("special", false);
      types[static_cast<size_t>(id)] = special ? kControl : kUserDefined;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    if (!present[static_cast<size_t>(i)]) {
      tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";
      types[static_cast<size_t>(i)] = kUnused;
    }

  // Merges, in either serialization: ["a", "b"] pairs or "a b" strings.
  std::vector<std::string> merges;
  merges.reserve(merges_it->size());
  for (const auto& m : *merges_it) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      if (s.find(' ') == std::string::npos) return make_error("tokenizer.json: merge '" + s + "' has no space");
      merges.push_back(s);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      return make_error("tokenizer.json: a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }

  // Which kind: byte-level (ByteLevel pre-tokenizer) or SentencePiece-style ("▁" normalizer / Metaspace).
  static const json kNull;
  auto member = [&](const char* key) -> const json& {
    auto it = tj.find(key);
    return it == tj.end() ? kNull : *it;
  };
  auto normalizers = flatten(member("normalizer"), "normalizer");
  if (!normalizers.ok()) return normalizers.error();
  auto pre_tokenizers = flatten(member("pre_tokenizer"), "pre_tokenizer");
  if (!pre_tokenizers.ok()) return pre_tokenizers.error();
  const std::string kSpace = "\xE2\x96\x81";  // ▁
  bool byte_level = false, spm = false, prepend_space = false, nfc = false;
  std::optional<std::string> split_regex;
  bool gpt2_default_regex = false;
  for (const json* nrm : *normalizers) {
    const std::string t = type_of(*nrm);
    if (t == "Prepend" && nrm->value("prepend", "") == kSpace) {
      prepend_space = spm = true;
    } else if (t == "Replace" && nrm->value("content", "") == kSpace) {
      spm = true;
    } else if (t == "NFC") {
      nfc = true;
    } else {
      return make_error("tokenizer.json: normalizer '" + (t.empty() ? nrm->dump().substr(0, 80) : t) +
                        "' is not supported (supported: NFC and SentencePiece's Prepend/Replace of \"\xE2\x96\x81\")");
    }
  }
  for (const json* pt : *pre_tokenizers) {
    const std::string t = type_of(*pt);
    if (t == "ByteLevel") {
      byte_level = true;
      if (pt->value("add_prefix_space", false))
        return make_error("tokenizer.json: ByteLevel add_prefix_space is not supported");
      if (pt->value("use_regex", true)) gpt2_default_regex = true;
    } else if (t == "Split") {
      auto pattern = pt->find("pattern");
      if (pattern == pt->end() || !pattern->is_object() || !pattern->contains("Regex") ||
          !(*pattern)["Regex"].is_string())
        return make_error("tokenizer.json: a Split pre-tokenizer without a Regex pattern is not supported");
      if (split_regex) return make_error("tokenizer.json: more than one Split pre-tokenizer is not supported");
      split_regex = (*pattern)["Regex"].get<std::string>();
    } else if (t == "Metaspace") {
      spm = true;
      const std::string scheme = pt->value("prepend_scheme", pt->value("add_prefix_space", true) ? "always" : "never");
      prepend_space = scheme != "never";
      if (pt->value("split", false)) return make_error("tokenizer.json: Metaspace with split = true is not supported");
    } else {
      return make_error("tokenizer.json: pre-tokenizer '" + (t.empty() ? pt->dump().substr(0, 80) : t) +
                        "' is not supported (supported: ByteLevel, Split, Metaspace)");
    }
  }
  if (byte_level == spm)
    return make_error(std::string("tokenizer.json: cannot tell a ") +
                      (spm ? "byte-level from a SentencePiece-style" : "byte-level or SentencePiece-style") +
                      " BPE from its normalizer and pre-tokenizer");

  std::vector<std::pair<std::string, GgufValue>> md;
  if (byte_level) {
    std::string pre;
    if (split_regex) {
      for (const auto& [regex, name] : kKnownSplits)
        if (*split_regex == regex) pre = name;
      if (pre.empty()) return make_error("tokenizer.json: the Split regex '" + *split_regex + "' is not a known pre-tokenizer "
                                         "(supported: llama-bpe, qwen2, gpt-2)");
    } else if (gpt2_default_regex) {
      pre = "gpt-2";
    } else {
      return make_error("tokenizer.json: a ByteLevel pre-tokenizer without its regex and without a Split is not supported");
    }
    // Carried as a pagoda key: the Tokenizer applies it; `pagoda convert` leaves it out, as llama.cpp's GGUF
    // files do not normalize.
    if (nfc) md.emplace_back("pagoda.tokenizer.normalizer", gguf_string("NFC"));
    md.emplace_back("tokenizer.ggml.model", gguf_string("gpt2"));
    md.emplace_back("tokenizer.ggml.pre", gguf_string(pre));
  } else {
    if (nfc) return make_error("tokenizer.json: NFC with a SentencePiece-style tokenizer is not supported");
    if (!model.value("byte_fallback", false))
      return make_error("tokenizer.json: a SentencePiece-style BPE without byte_fallback is not supported");
    md.emplace_back("tokenizer.ggml.model", gguf_string("llama"));
    md.emplace_back("tokenizer.ggml.pre", gguf_string("default"));
    md.emplace_back("tokenizer.ggml.add_space_prefix", gguf_bool(prepend_space));
  }
  md.emplace_back("tokenizer.ggml.tokens", gguf_string_array(tokens));

  if (byte_level) {
    md.emplace_back("tokenizer.ggml.merges", gguf_string_array(merges));
  } else {
    // Scores from merge ranks: -(rank + 1) for the first merge forming a token; tokens no merge forms rank below
    // every merge (single characters, bytes and specials are never merge results: 0).
    std::unordered_map<std::string, size_t> first_rank;
    for (size_t r = 0; r < merges.size(); ++r) {
      const size_t sp = merges[r].find(' ');
      first_rank.emplace(merges[r].substr(0, sp) + merges[r].substr(sp + 1), r);
    }
    std::vector<float> scores(static_cast<size_t>(n), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const std::string& t = tokens[static_cast<size_t>(i)];
      if (types[static_cast<size_t>(i)] != kNormal) continue;
      if (is_byte_token(t)) {
        types[static_cast<size_t>(i)] = kByte;
        continue;
      }
      auto it = first_rank.find(t);
      if (it != first_rank.end())
        scores[static_cast<size_t>(i)] = -static_cast<float>(it->second + 1);
      else if (utf8_length(t) > 1)
        scores[static_cast<size_t>(i)] = -static_cast<float>(merges.size() + 1);
    }
    md.emplace_back("tokenizer.ggml.scores", gguf_float32_array(scores));
  }

  // Special ids: tokenizer_config.json's tokens, else config.json's ids.
  const json* tc = in.tokenizer_config;
  auto unk_text = model.contains("unk_token") && model["unk_token"].is_string()
                      ? std::optional<std::string>(model["unk_token"].get<std::string>())
                      : token_text(tc, "unk_token");
  auto special_id = [&](const char* text_key, const char* config_key) -> std::optional<int64_t> {
    if (auto text = token_text(tc, text_key)) {
      auto it = ids.find(*text);
      if (it != ids.end()) return it->second;
    }
    auto id = id_field(in.config, config_key);
    if (id && *id >= 0 && *id < n) return id;
    return std::nullopt;
  };
  const auto bos = special_id("bos_token", "bos_token_id");
  const auto eos = special_id("eos_token", "eos_token_id");
  const auto pad = special_id("pad_token", "pad_token_id");
  if (unk_text) {
    auto it = ids.find(*unk_text);
    if (it != ids.end()) {
      md.emplace_back("tokenizer.ggml.unknown_token_id", gguf_uint32(static_cast<uint32_t>(it->second)));
      // An added special <unk> stays CONTROL, as llama.cpp's converter writes it; a plain vocabulary entry is UNKNOWN.
      if (types[static_cast<size_t>(it->second)] == kNormal) types[static_cast<size_t>(it->second)] = kUnknown;
    }
  }
  md.emplace_back("tokenizer.ggml.token_type", gguf_int32_array(types));
  if (bos) md.emplace_back("tokenizer.ggml.bos_token_id", gguf_uint32(static_cast<uint32_t>(*bos)));
  if (eos) md.emplace_back("tokenizer.ggml.eos_token_id", gguf_uint32(static_cast<uint32_t>(*eos)));
  if (pad) md.emplace_back("tokenizer.ggml.padding_token_id", gguf_uint32(static_cast<uint32_t>(*pad)));
  // add_bos: tokenizer_config's flag, else whether the post-processor starts with the BOS token.
  std::optional<bool> add_bos = bool_field(tc, "add_bos_token");
  if (!add_bos) {
    const json& pp = member("post_processor");
    bool starts_with_bos = false;
    if (type_of(pp) == "TemplateProcessing" && pp.contains("single") && pp["single"].is_array() &&
        !pp["single"].empty() && pp["single"][0].contains("SpecialToken") && bos)
      starts_with_bos = pp["single"][0]["SpecialToken"].value("id", "") == tokens[static_cast<size_t>(*bos)];
    add_bos = starts_with_bos;
  }
  md.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(*add_bos));
  md.emplace_back("tokenizer.ggml.add_eos_token", gguf_bool(bool_field(tc, "add_eos_token").value_or(false)));
  // The chat template: a string, or a list of named templates (the "default" one).
  if (tc != nullptr && tc->is_object() && tc->contains("chat_template")) {
    const json& ct = (*tc)["chat_template"];
    if (ct.is_string()) {
      md.emplace_back("tokenizer.chat_template", gguf_string(ct.get<std::string>()));
    } else if (ct.is_array()) {
      for (const auto& t : ct)
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
          md.emplace_back("tokenizer.chat_template", gguf_string(t["template"].get<std::string>()));
    }
  }
  return md;
}

}  // namespace

Result<std::vector<std::pair<std::string, GgufValue>>> hf_tokenizer_metadata(const HfTokenizerInput& in) {
  // A field of an unexpected JSON type (a number where a string belongs, say) makes nlohmann's accessors throw:
  // that is an error in the file, reported as one.
  try {
    return read_tokenizer(in);
  } catch (const json::exception& e) {
    return make_error(std::string("tokenizer.json: a field has an unexpected type (") + e.what() + ")");
  }
}

}  // namespace pagoda
