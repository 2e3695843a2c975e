// Feeds arbitrary bytes to the GGUF reader and, when they parse, to everything that consumes a parsed file
// (hyperparameters, weight views, tokenizer), touching every byte range the reader vouched for.
#include <cstddef>
#include <cstdint>

#include "io/gguf_file.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = pagoda::GgufFile::parse(data, size, "fuzz");
  if (!file.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const auto& t : file->tensors())
    if (t.n_bytes > 0) sink = sink ^ t.data[0] ^ t.data[t.n_bytes - 1];
  for (const auto& kv : file->metadata()) (void)kv.second.to_display_string();
  auto hp = pagoda::read_hparams(*file);
  if (hp.ok()) (void)pagoda::load_weights(*file, *hp);
  auto tok = pagoda::Tokenizer::from_gguf(*file);
  if (tok.ok()) {
    auto ids = (*tok)->encode("Hello world, 1234 \xe4\xbd\xa0\xe5\xa5\xbd <s>", true, true);
    (void)(*tok)->decode(ids);
  }
  return 0;
}
