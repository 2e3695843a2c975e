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
  GgmlType dtype = GgmlType::F16;  // type of the 2-D weight matrices; norms are always F32
  // llama-quantize's Q4_K_M mix instead of one type (dtype must be Q4_K): output.weight Q6_K, and attn_v and
  // ffn_down Q6_K in the layers where llama.cpp spends more bits (the first and last eighth, every third between).
  bool q4_k_m = false;
  uint64_t seed = 0;
};

// Checks the options and builds the file. The vocabulary (every tokenizer.* key) is copied from `vocab`.
Result<GgufWriter> synthesize_model(const SynthOptions& options, const GgufFile& vocab);

}  // namespace pagoda
