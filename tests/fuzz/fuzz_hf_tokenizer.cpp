// Feeds arbitrary bytes as tokenizer.json to the Hugging Face tokenizer reader and, when it accepts them, builds the
// tokenizer from the metadata it produced and encodes and decodes a text with it.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "io/gguf_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"
#include "util/json_depth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || pagoda::json_nests_deeper_than(j, 64)) return 0;
  pagoda::HfTokenizerInput in;
  in.tokenizer = &j;
  in.n_vocab = 512;
  auto md = pagoda::hf_tokenizer_metadata(in);
  if (!md.ok()) return 0;
  auto file = pagoda::GgufFile::assemble("fuzz", std::move(*md), {}, {}, {});
  auto tok = pagoda::Tokenizer::from_gguf(file);
  if (tok.ok()) {
    auto ids = (*tok)->encode("Hello world, 1234 \xe4\xbd\xa0\xe5\xa5\xbd <s>", true, true);
    (void)(*tok)->decode(ids);
  }
  return 0;
}
