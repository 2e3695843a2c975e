#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {
namespace {

using Slot = std::optional<TokenId> SpecialTokens::*;

// Reads one id key. Absent, negative or out-of-range values keep the current (default) id; llama.cpp warns and
// does the same. A value of the wrong kind is a broken file and is reported.
Status read_id(const GgufFile& file, const std::string& key, const Vocab& vocab, std::optional<TokenId>& id) {
  const GgufValue* v = file.find(key);
  if (!v) return Status::success();
  if (!v->is_integer())
    return make_error("metadata key '" + key + "' has type " + gguf_value_type_name(v->type) +
                      ", expected an integer token id");
  int64_t value = -1;
  if (auto* u = std::get_if<uint64_t>(&v->data)) {
    value = *u > static_cast<uint64_t>(vocab.size()) ? -1 : static_cast<int64_t>(*u);
  } else {
    value = std::get<int64_t>(v->data);
  }
  if (value >= 0 && value < vocab.size()) id = static_cast<TokenId>(value);
  return Status::success();
}

// The lowest id whose text is one of `texts`. llama.cpp takes whichever its hash map yields first; the lowest
// id is the deterministic choice and agrees with it whenever a vocabulary has a single candidate.
std::optional<TokenId> find_first(const Vocab& vocab, const std::vector<std::string_view>& texts) {
  std::optional<TokenId> best;
  for (std::string_view t : texts) {
    auto id = vocab.find(t);
    if (id && (!best || *id < *best)) best = id;
  }
  return best;
}

// Texts llama.cpp (llama-vocab.cpp, load()) uses to find special tokens that metadata did not name.
struct DetectRule {
  Slot slot;
  std::vector<std::string_view> texts;
};

const std::vector<DetectRule>& detect_rules() {
  static const std::vector<DetectRule> kRules = {
      {&SpecialTokens::eot,
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
        "[EOT]",
        "<\xef\xbd\x9c"
        "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
        "<end_of_utterance>"}},
      {&SpecialTokens::eom, {"<|eom_id|>"}},
      {&SpecialTokens::fim_pre,
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81"
        "begin\xef\xbd\x9c>",
        "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
      {&SpecialTokens::fim_suf,
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81hole\xef\xbd\x9c>",
        "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
      {&SpecialTokens::fim_mid,
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
        "<\xef\xbd\x9c"
        "fim\xe2\x96\x81"
        "end\xef\xbd\x9c>",
        "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
      {&SpecialTokens::fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {&SpecialTokens::fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {&SpecialTokens::fim_sep, {"<|file_sep|>"}},
  };
  return kRules;
}

// Texts that end generation whatever the metadata says (llama.cpp marks them CONTROL too).
constexpr std::string_view kEogTexts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<\xef\xbd\x9c"
                                          "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"};

struct IdKey {
  const char* key;
  Slot slot;
};

const IdKey kIdKeys[] = {
    {"tokenizer.ggml.bos_token_id", &SpecialTokens::bos},
    {"tokenizer.ggml.eos_token_id", &SpecialTokens::eos},
    {"tokenizer.ggml.eot_token_id", &SpecialTokens::eot},
    {"tokenizer.ggml.eom_token_id", &SpecialTokens::eom},
    {"tokenizer.ggml.unknown_token_id", &SpecialTokens::unk},
    {"tokenizer.ggml.seperator_token_id", &SpecialTokens::sep},  // sic: the GGUF key is misspelt
    {"tokenizer.ggml.padding_token_id", &SpecialTokens::pad},
    {"tokenizer.ggml.mask_token_id", &SpecialTokens::mask},
    {"tokenizer.ggml.fim_pre_token_id", &SpecialTokens::fim_pre},
    {"tokenizer.ggml.fim_suf_token_id", &SpecialTokens::fim_suf},
    {"tokenizer.ggml.fim_mid_token_id", &SpecialTokens::fim_mid},
    {"tokenizer.ggml.fim_pad_token_id", &SpecialTokens::fim_pad},
    {"tokenizer.ggml.fim_rep_token_id", &SpecialTokens::fim_rep},
    {"tokenizer.ggml.fim_sep_token_id", &SpecialTokens::fim_sep},
    // Deprecated spellings, read after the current ones as llama.cpp does.
    {"tokenizer.ggml.prefix_token_id", &SpecialTokens::fim_pre},
    {"tokenizer.ggml.suffix_token_id", &SpecialTokens::fim_suf},
    {"tokenizer.ggml.middle_token_id", &SpecialTokens::fim_mid},
};

std::string metadata_string(const GgufFile& file, const std::string& key) {
  auto v = file.get_string_opt(key);
  return v.ok() && *v ? **v : std::string();
}

bool contains_any(const std::string& s, std::initializer_list<std::string_view> parts) {
  for (auto p : parts)
    if (s.find(p) != std::string::npos) return true;
  return false;
}

void set_defaults(VocabKind kind, const Vocab& vocab, SpecialTokens& st) {
  auto in_range = [&](TokenId id) { return vocab.contains(id) ? std::optional<TokenId>(id) : std::nullopt; };
  if (kind == VocabKind::kSpm) {
    st.bos = in_range(1);
    st.eos = in_range(2);
    st.unk = in_range(0);
  } else {
    st.bos = in_range(11);
    st.eos = in_range(11);
  }
}

// Builds the end-of-generation set and applies llama.cpp's workarounds for particular vocabularies.
void build_end_of_generation(SpecialTokens& st, Vocab& vocab) {
  std::vector<TokenId>& eog = st.end_of_generation;
  for (Slot slot : {&SpecialTokens::fim_pad, &SpecialTokens::fim_rep, &SpecialTokens::fim_sep})
    if (st.*slot) eog.push_back(*(st.*slot));
  for (std::string_view text : kEogTexts) {
    if (auto id = vocab.find(text)) {
      eog.push_back(*id);
      vocab.add_attr(*id, TokenAttr::kControl);
    }
  }
  // gpt-oss: these structural tokens must always render, so they become USER_DEFINED.
  for (std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    if (auto id = vocab.find(text)) vocab.set_attr(*id, TokenAttr::kUserDefined);
  for (Slot slot : {&SpecialTokens::eos, &SpecialTokens::eot, &SpecialTokens::eom})
    if (st.*slot) eog.push_back(*(st.*slot));
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

  auto in_eog = [&](std::string_view text) -> std::optional<TokenId> {
    auto id = vocab.find(text);
    if (id && std::binary_search(eog.begin(), eog.end(), *id)) return id;
    return std::nullopt;
  };
  auto erase_eog = [&](TokenId id, uint32_t new_attr) {
    eog.erase(std::find(eog.begin(), eog.end(), id));
    vocab.set_attr(id, new_attr);
  };
  // o200k_harmony and solar-open use "<|end|>" between messages, not to stop.
  if (auto end = in_eog("<|end|>")) {
    const bool harmony = in_eog("<|return|>") && in_eog("<|call|>");
    const bool solar = in_eog("<|calls|>") && in_eog("<|flush|>");
    if (harmony || solar) erase_eog(*end, TokenAttr::kUserDefined);
  }
  // gemma4 and paddleocr: "</s>" is an ordinary token there.
  if (auto s = in_eog("</s>"); s && in_eog("<|tool_response>")) erase_eog(*s, TokenAttr::kNormal);
}

// Per-model attribute fixes llama.cpp keys on the model name (the GGUF files lack per-token strip flags).
void apply_model_rules(const GgufFile& file, const SpecialTokens& st, Vocab& vocab) {
  std::string name = metadata_string(file, "general.name");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string pre = metadata_string(file, "tokenizer.ggml.pre");
  const std::string arch = metadata_string(file, "general.architecture");
  auto set_bit = [&](std::string_view text, uint32_t bit, bool on) {
    auto id = vocab.find(text);
    if (!id) return;
    if (on) {
      vocab.add_attr(*id, bit);
    } else {
      vocab.set_attr(*id, vocab.attr(*id) & ~bit);
    }
  };
  if (contains_any(pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set_bit("<mask>", TokenAttr::kLstrip, true);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    // Phi-3's chat tokens swallow the whitespace that follows them.
    for (TokenId id : st.partition_order) vocab.add_attr(id, TokenAttr::kRstrip);
    set_bit("</s>", TokenAttr::kRstrip, true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) set_bit(text, TokenAttr::kRstrip, false);
  } else if (contains_any(name, {"modern-bert"})) {
    set_bit("[MASK]", TokenAttr::kLstrip, true);
  }
}

}  // namespace

Result<SpecialTokens> load_special_tokens(const GgufFile& file, VocabKind kind, Vocab& vocab) {
  SpecialTokens st;
  set_defaults(kind, vocab, st);
  for (const IdKey& k : kIdKeys) PAGODA_RETURN_IF_ERROR(read_id(file, k.key, vocab, st.*(k.slot)));

  // Find what metadata did not name; a token found this way is a control token even if typed otherwise.
  for (const DetectRule& rule : detect_rules()) {
    if (st.*(rule.slot)) continue;
    if (auto id = find_first(vocab, rule.texts)) {
      st.*(rule.slot) = id;
      vocab.add_attr(*id, TokenAttr::kControl);
    }
  }

  // Control tokens named "unused" are placeholders.
  for (TokenId id = 0; id < vocab.size(); ++id)
    if (vocab.has_attr(id, TokenAttr::kControl) && vocab.text(id).find("unused") != std::string::npos)
      vocab.add_attr(id, TokenAttr::kUnused);

  build_end_of_generation(st, vocab);

  for (TokenId id = 0; id < vocab.size(); ++id)
    if (vocab.has_attr(id, TokenAttr::kControl | TokenAttr::kUserDefined | TokenAttr::kUnknown))
      st.partition_order.push_back(id);
  std::stable_sort(st.partition_order.begin(), st.partition_order.end(),
                   [&](TokenId a, TokenId b) { return vocab.text(a).size() > vocab.text(b).size(); });

  apply_model_rules(file, st, vocab);
  return st;
}

}  // namespace pagoda
