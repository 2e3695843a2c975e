#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_partition.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/unicode_nfc.h"

namespace pagoda {
namespace {

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kPreKey = "tokenizer.ggml.pre";
constexpr const char* kAddBosKey = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEosKey = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSpacePrefixKey = "tokenizer.ggml.add_space_prefix";
// Set only for Hugging Face folders whose tokenizer.json normalizes (hf_tokenizer_json.h); GGUF files never carry
// it, so they tokenize exactly as llama.cpp does.
constexpr const char* kNormalizerKey = "pagoda.tokenizer.normalizer";

const std::string kEmpty;

// The byte of a "<0xXX>" token, read like llama.cpp's strtol(text.substr(3, 2), 16): hex digits up to the first
// other character; none gives 0.
char byte_token_value(const std::string& text) {
  int value = 0;
  for (size_t i = 3; i < std::min<size_t>(text.size(), 5); ++i) {
    const char c = text[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) break;
    value = value * 16 + digit;
  }
  return static_cast<char>(value);
}

// Overrides `flag` with a bool key when present.
Status read_flag(const GgufFile& file, const char* key, bool& flag) {
  auto v = file.get_bool_opt(key);
  if (!v.ok()) return v.error();
  if (*v) flag = **v;
  return Status::success();
}

std::string id_string(std::optional<TokenId> id) { return id ? std::to_string(*id) : std::string("none"); }

}  // namespace

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& file) {
  auto model = file.get_string(kModelKey);
  if (!model.ok()) return model.error();
  VocabKind kind;
  if (*model == "llama") {
    kind = VocabKind::kSpm;
  } else if (*model == "gpt2") {
    kind = VocabKind::kBpe;
  } else {
    return make_error("unsupported tokenizer " + std::string(kModelKey) + " = '" + *model +
                      "' (supported: llama, gpt2)");
  }
  auto pre = file.get_string_opt(kPreKey);
  if (!pre.ok()) return pre.error();

  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  tok->model_type_ = *model;
  auto vocab = Vocab::from_gguf(file);
  if (!vocab.ok()) return vocab.error();
  tok->vocab_ = std::move(*vocab);

  // Defaults per model type, as llama.cpp's llama_vocab::impl::load sets them before reading overrides.
  PreTokenizerConfig pre_config;
  bool add_space_prefix = false;
  if (kind == VocabKind::kSpm) {
    tok->add_bos_ = true;
    add_space_prefix = true;
  } else {
    auto config = pre_tokenizer_config(pre->value_or(""));
    if (!config.ok()) return config.error();
    pre_config = std::move(*config);
    tok->add_bos_ = pre_config.add_bos;
  }
  PAGODA_RETURN_IF_ERROR(read_flag(file, kAddSpacePrefixKey, add_space_prefix));
  auto normalizer = file.get_string_opt(kNormalizerKey);
  if (!normalizer.ok()) return normalizer.error();
  if (normalizer->has_value()) {
    if (**normalizer != "NFC") return make_error(std::string(kNormalizerKey) + " '" + **normalizer + "' is not supported");
    tok->nfc_ = true;
  }

  auto special = load_special_tokens(file, kind, tok->vocab_);
  if (!special.ok()) return special.error();
  tok->special_ = std::move(*special);
  PAGODA_RETURN_IF_ERROR(read_flag(file, kAddBosKey, tok->add_bos_));
  PAGODA_RETURN_IF_ERROR(read_flag(file, kAddEosKey, tok->add_eos_));
  if (tok->add_bos_ && !tok->special_.bos)
    return make_error(std::string(kAddBosKey) + " is true but the vocabulary has no BOS token");
  if (tok->add_eos_ && !tok->special_.eos)
    return make_error(std::string(kAddEosKey) + " is true but the vocabulary has no EOS token");

  if (kind == VocabKind::kSpm) {
    tok->encoder_ = std::make_unique<SpmTokenizer>(tok->vocab_, tok->special_.unk, add_space_prefix);
  } else {
    auto bpe = BpeTokenizer::create(file, tok->vocab_, pre_config);
    if (!bpe.ok()) return bpe.error();
    tok->encoder_ = std::move(*bpe);
  }
  tok->build_pieces();
  return tok;
}

void Tokenizer::build_pieces() {
  pieces_.resize(static_cast<size_t>(vocab_.size()));
  for (TokenId id = 0; id < vocab_.size(); ++id) {
    const uint32_t attr = vocab_.attr(id);
    const std::string& text = vocab_.text(id);
    std::string& piece = pieces_[static_cast<size_t>(id)];
    // Order matters: a token that is both (e.g. USER_DEFINED marked CONTROL by an EOG rule) renders as control.
    if (attr & (TokenAttr::kUnknown | TokenAttr::kControl)) {
      piece.clear();
    } else if (attr & TokenAttr::kUserDefined) {
      piece = text;
    } else if (attr & TokenAttr::kNormal) {
      piece = encoder_->normal_piece(text);
    } else if (attr & TokenAttr::kByte) {
      piece.assign(1, byte_token_value(text));
    }  // UNUSED and UNDEFINED tokens render as nothing, like control tokens.
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) out.push_back(*special_.bos);
  bool after_special = true;
  for (const TextFragment& frag : partition_special_tokens(text, special_.partition_order, vocab_, parse_special)) {
    if (frag.token) {
      out.push_back(*frag.token);
      after_special = true;
    } else {
      if (nfc_)
        encoder_->encode(to_nfc(text.substr(frag.offset, frag.length)), after_special, out);
      else
        encoder_->encode(text.substr(frag.offset, frag.length), after_special, out);
      after_special = false;
    }
  }
  if (add_special && add_eos_) out.push_back(*special_.eos);
  return out;
}

const std::string& Tokenizer::piece(TokenId id) const {
  return vocab_.contains(id) ? pieces_[static_cast<size_t>(id)] : kEmpty;
}

std::string Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  for (TokenId id : ids) out += piece(id);
  return out;
}

const std::string& Tokenizer::token_text(TokenId id) const { return vocab_.contains(id) ? vocab_.text(id) : kEmpty; }

bool Tokenizer::is_end_of_generation(TokenId id) const {
  return std::binary_search(special_.end_of_generation.begin(), special_.end_of_generation.end(), id);
}

std::string Tokenizer::summary() const {
  return model_type_ + " tokenizer (" + encoder_->describe() + "): " + std::to_string(n_vocab()) + " tokens, bos " +
         id_string(special_.bos) + ", eos " + id_string(special_.eos) + ", add_bos " + (add_bos_ ? "yes" : "no") +
         ", add_eos " + (add_eos_ ? "yes" : "no") + ", " + std::to_string(special_.end_of_generation.size()) +
         " end-of-generation tokens" + (nfc_ ? ", NFC-normalized (tokenizer.json)" : "");
}

}  // namespace pagoda
