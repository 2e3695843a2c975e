// tokenizer.json for byte-level BPE models: ../shared's Llama 3 and Qwen2 vocabularies were built from the models'
// published tokenizer.json the way llama.cpp's converter does; here each is turned back into a tokenizer.json of the
// published shape (ByteLevel + the model's Split regex, merges as strings or pairs, Qwen2's NFC normalizer) and read
// through pagoda's Hugging Face path. Every one of llama.cpp's test vectors must tokenize as llama.cpp tokenizes it,
// after NFC where tokenizer.json asks for it (the documented difference: llama.cpp does not normalize).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "golden_shared.h"
#include "io/gguf_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_nfc.h"
#include "vocab_vectors.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

const char* kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
const char* kQwen2Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

std::vector<std::string> strings(const GgufFile& f, const char* key) {
  std::vector<std::string> out;
  auto arr = f.get_array(key, GgufValueType::STRING);
  EXPECT_TRUE(arr.ok());
  if (arr.ok())
    for (const auto& v : (*arr)->items) out.push_back(std::get<std::string>(v.data));
  return out;
}

// A tokenizer.json of the published shape holding the GGUF vocabulary.
json tokenizer_json_from(const GgufFile& f, const char* split, bool nfc, bool merges_as_pairs) {
  const auto tokens = strings(f, "tokenizer.ggml.tokens");
  const auto merges = strings(f, "tokenizer.ggml.merges");
  auto types = f.get_array("tokenizer.ggml.token_type", GgufValueType::INT32);
  json vocab = json::object(), added = json::array(), merge_list = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t type = std::get<int64_t>((*types)->items[i].data);
    if (type == 3 || type == 4)
      added.push_back({{"id", i}, {"content", tokens[i]}, {"special", type == 3}, {"normalized", false}});
    else
      vocab[tokens[i]] = i;
  }
  for (const auto& m : merges) {
    if (merges_as_pairs) {
      const size_t sp = m.find(' ');
      merge_list.push_back({m.substr(0, sp), m.substr(sp + 1)});
    } else {
      merge_list.push_back(m);
    }
  }
  json t;
  t["version"] = "1.0";
  t["added_tokens"] = added;
  t["normalizer"] = nfc ? json{{"type", "NFC"}} : json();
  t["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", split}}}, {"behavior", "Isolated"}, {"invert", false}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
  t["decoder"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}, {"byte_fallback", false}};
  return t;
}

struct Case {
  const char* vocab;
  const char* split;
  bool nfc;
  bool merges_as_pairs;
};

class HfByteLevelTokenizer : public ::testing::TestWithParam<Case> {};

TEST_P(HfByteLevelTokenizer, MatchesLlamaCppOnEveryVector) {
  const Case c = GetParam();
  const std::string path = kShared + "/vocab/ggml-vocab-" + c.vocab + ".gguf";
  auto gguf = GgufFile::open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  auto reference = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  const json tj = tokenizer_json_from(*gguf, c.split, c.nfc, c.merges_as_pairs);
  HfTokenizerInput in;
  in.tokenizer = &tj;
  in.n_vocab = static_cast<int64_t>(strings(*gguf, "tokenizer.ggml.tokens").size());
  auto md = hf_tokenizer_metadata(in);
  ASSERT_TRUE(md.ok()) << md.error().message;
  const GgufFile assembled = GgufFile::assemble("tokenizer.json", std::move(*md), {}, {}, {});
  EXPECT_EQ(*assembled.get_string("tokenizer.ggml.pre"), c.vocab == std::string("qwen2") ? "qwen2" : "llama-bpe");
  auto hf = Tokenizer::from_gguf(assembled);
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  const auto cases = read_vectors(path);
  ASSERT_EQ(cases.size(), 46u);
  int normalized = 0;
  for (const auto& v : cases) {
    const std::string text = c.nfc ? to_nfc(v.text) : v.text;
    normalized += text != v.text;
    const auto want = text == v.text ? v.ids : (*reference)->encode(text, false, false);
    EXPECT_EQ((*hf)->encode(v.text, false, false), want) << "'" << v.text << "'";
    EXPECT_EQ((*hf)->decode(want), text);
  }
  if (c.nfc) {
    // A decomposed "é" (e + U+0301) is composed first: the folder tokenizes it as the precomposed text.
    const std::string decomposed = "caf" "e\xCC\x81", composed = "caf\xC3\xA9";
    EXPECT_EQ((*hf)->encode(decomposed, false, false), (*reference)->encode(composed, false, false));
    EXPECT_NE((*reference)->encode(decomposed, false, false), (*reference)->encode(composed, false, false));
  }
  std::printf("[hf-tokenizer] %s: 46 vectors match (%d changed by NFC)\n", c.vocab, normalized);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, HfByteLevelTokenizer,
                         ::testing::Values(Case{"llama-bpe", kLlama3Split, false, false},
                                           Case{"qwen2", kQwen2Split, true, true}),
                         [](const auto& info) {
                           std::string n = info.param.vocab;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace pagoda
