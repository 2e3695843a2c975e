// Synthetic models (Llama, GPT-2, GPT-NeoX shapes) with seeded random weights: realistic shapes for benchmarks and stress tests,
// written as standard GGUF files (llama.cpp loads them) with the vocabulary of a real tokenizer.
#pragma once

#include <cstdint>
#include <string>

#include "io/ggml_type.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "util/result.h"

namespace pagoda {

struct SynthOptions {
  std::string arch = "llama";
  int64_t dim = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t ffn = 0;
  int64_t context = 2048;
  // A llama-quantize preset (io/quant_preset.h: f32, f16, bf16, q8_0, q4_k_m, iq4_xs, ...) choosing each matrix's
  // type as llama-quantize would for a model of these shapes; norms are always F32.
  std::string dtype = "f16";
  uint64_t seed = 0;
};

// Checks the options and builds the file. The vocabulary (every tokenizer.* key) is copied from `vocab`.
Result<GgufWriter> synthesize_model(const SynthOptions& options, const GgufFile& vocab);

}  // namespace pagoda
