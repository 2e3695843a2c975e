#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

// Character classes, spelt out so that they agree with llama.cpp's tables (unicode-data.cpp, Unicode 15.1)
// rather than with whatever Unicode version the system's PCRE2 has (10.42 in Debian 12 is Unicode 14):
//  - whitespace is llama.cpp's unicode_set_whitespace (PCRE2's \s under UCP also matches U+180E);
//  - letters, numbers and punctuation add the code points Unicode 15.0/15.1 assigned (Kawi, CJK extension H,
//    ...). With a newer PCRE2 these ranges are already in \p{..} and adding them changes nothing.
constexpr const char* kWs =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
constexpr const char* kL =
    "\\p{L}\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}"
    "\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{2B739}"
    "\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}";
constexpr const char* kN = "\\p{N}\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}";
constexpr const char* kP = "\\p{P}\\x{11B00}-\\x{11B09}\\x{11F43}-\\x{11F4F}";

// Expands the placeholders {WS} {L} {N} {P} (class contents, to be used inside [...]).
std::string expand(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    auto starts = [&](std::string_view tag) { return pattern.substr(i, tag.size()) == tag; };
    if (starts("{WS}")) {
      out += kWs;
      i += 3;
    } else if (starts("{L}")) {
      out += kL;
      i += 2;
    } else if (starts("{N}")) {
      out += kN;
      i += 2;
    } else if (starts("{P}")) {
      out += kP;
      i += 2;
    } else {
      out.push_back(pattern[i]);
    }
  }
  return out;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (the trailing \s+ is what llama.cpp's hand-written matcher does for a lone whitespace before a non-space).
constexpr std::string_view kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{WS}{L}{N}]+|[{WS}]+(?![^{WS}])|[{WS}]+";

// llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
constexpr std::string_view kLlama3Regex =
    "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\\r\\n{L}{N}]?[{L}]+|[{N}]{1,3}| ?[^{WS}{L}{N}]+[\\r\\n]*|"
    "[{WS}]*[\\r\\n]+|[{WS}]+(?![^{WS}])|[{WS}]+";

// Qwen2: the llama-3 expression with single digits (\p{N} instead of \p{N}{1,3}).
constexpr std::string_view kQwen2Regex =
    "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\\r\\n{L}{N}]?[{L}]+|[{N}]| ?[^{WS}{L}{N}]+[\\r\\n]*|"
    "[{WS}]*[\\r\\n]+|[{WS}]+(?![^{WS}])|[{WS}]+";

bool is_one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeDeleter>;
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

struct Span {
  size_t begin;
  size_t length;
};

}  // namespace

struct PreTokenizer::Compiled {
  std::vector<CodePtr> codes;
};

Result<PreTokenizerConfig> pre_tokenizer_config(const std::string& pre) {
  PreTokenizerConfig config;
  config.name = pre;
  if (pre.empty() || pre == "default") {
    // llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT chain.
    config.regexes = {expand("[{P}\\$\\+<=>\\^~\\|]+"), expand(kGpt2Regex), expand("[{N}]+"), "[0-9][0-9][0-9]"};
  } else if (is_one_of(pre, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                             "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo",
                             "jais", "exaone4", "trillion", "granite-docling"})) {
    config.regexes = {expand(kGpt2Regex)};
  } else if (is_one_of(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                             "jina-v5-nano"})) {
    config.regexes = {expand(kLlama3Regex)};
    config.ignore_merges = true;
    config.add_bos = true;
  } else if (is_one_of(pre, {"qwen2", "deepseek-r1-qwen", "megrez", "kormo", "f2llmv2", "stablelm2"})) {
    config.regexes = {expand(kQwen2Regex)};
  } else if (is_one_of(pre, {"dbrx", "smaug-bpe"})) {
    config.regexes = {expand(kLlama3Regex)};
  } else if (is_one_of(
                 pre, {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"})) {
    config.regexes = {expand("[{N}]"), expand(kGpt2Regex)};
  } else {
    return make_error("unsupported pre-tokenizer tokenizer.ggml.pre = '" + pre +
                      "' (supported: default, the gpt-2, llama-bpe, qwen2 and starcoder families)");
  }
  return config;
}

PreTokenizer::PreTokenizer(PreTokenizerConfig config, std::unique_ptr<Compiled> compiled)
    : config_(std::move(config)), compiled_(std::move(compiled)) {}
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(const PreTokenizerConfig& config) {
  auto compiled = std::make_unique<Compiled>();
  for (const std::string& regex : config.regexes) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    CodePtr code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.c_str()), regex.size(), PCRE2_UTF | PCRE2_UCP,
                               &error_code, &error_offset, nullptr));
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return make_error("pre-tokenizer '" + config.name + "': bad regex at offset " + std::to_string(error_offset) +
                        ": " + reinterpret_cast<const char*>(message));
    }
    // JIT is an optimisation only; without it (unsupported CPU, no executable memory) matching still works.
    (void)pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
    compiled->codes.push_back(std::move(code));
  }
  return PreTokenizer(config, std::move(compiled));
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<Span> spans;
  if (!text.empty()) spans.push_back({0, text.size()});
  std::vector<Span> next;
  for (const CodePtr& code : compiled_->codes) {
    MatchDataPtr md(pcre2_match_data_create_from_pattern(code.get(), nullptr));
    next.clear();
    next.reserve(spans.size() * 2);
    for (const Span& span : spans) {
      // Each span is its own subject, so lookaheads such as (?!\S) see its end as the end of text, as in llama.cpp.
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + span.begin);
      size_t pos = 0;      // where the next search starts
      size_t emitted = 0;  // end of what has been emitted so far
      while (md && pos < span.length) {
        int rc = pcre2_match(code.get(), subject, span.length, pos, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
          rc = pcre2_match(code.get(), subject, span.length, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.get(), nullptr);
        // No match, or a resource limit on pathological input: the rest stays one unmatched piece.
        if (rc < 0) break;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        const size_t match_begin = ov[0], match_end = ov[1];
        if (match_end == match_begin) {
          // An empty match adds no word; step over one character and search again.
          if (match_begin >= span.length) break;
          pos = match_begin + utf8_lead_length(text[span.begin + match_begin]);
          continue;
        }
        if (match_begin > emitted) next.push_back({span.begin + emitted, match_begin - emitted});
        next.push_back({span.begin + match_begin, match_end - match_begin});
        emitted = pos = match_end;
      }
      if (emitted < span.length) next.push_back({span.begin + emitted, span.length - emitted});
    }
    spans.swap(next);
  }
  std::vector<std::string_view> words;
  words.reserve(spans.size());
  for (const Span& s : spans) words.push_back(text.substr(s.begin, s.length));
  return words;
}

}  // namespace pagoda
