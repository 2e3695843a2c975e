// A Hugging Face model folder (config.json, model.safetensors or sharded model-0000N-of-0000M.safetensors with
// model.safetensors.index.json, tokenizer.json, tokenizer_config.json, generation_config.json) presented as the GGUF
// that llama.cpp's converter would write from it: the same metadata keys and tensor names, so that everything
// downstream (hyperparameters, weights, tokenizer, chat template, `inspect`, `convert`) reads one format.
// Tensors are memory-mapped views into the safetensors files; only those a family stores differently from GGUF are
// rearranged into memory (GPT-2's transposed Conv1D weights, GPT-NeoX's per-head interleaved QKV), as the
// family's ArchSpec says. Llama's Q/K are read unpermuted with NeoX pairing (HfFolder::rope), which computes the
// same rotation.
#pragma once

#include <string>

#include "io/gguf_file.h"
#include "kernels/cpu/activations.h"
#include "kernels/cpu/rope.h"
#include "model/arch/arch_spec.h"
#include "util/result.h"

namespace pagoda {

struct HfFolder {
  GgufFile gguf;                     // the folder as GGUF metadata + tensor views
  const ArchSpec* spec = nullptr;    // the family (config.json model_type)
  RopeType rope = RopeType::kNormal;  // pairing for the stored (unpermuted) Q/K rows
  GeluKind gelu = GeluKind::kTanh;    // config.json's activation, for GELU families
};

// Whether `path` is a directory (then it is read as a Hugging Face folder).
bool is_directory(const std::string& path);

// `for_convert`: apply the rearrangements `pagoda convert` needs for llama.cpp (Llama's Q/K permutation) as well.
Result<HfFolder> open_hf_folder(const std::string& dir, bool for_convert = false);

// A .gguf file, or a Hugging Face folder presented as GGUF: for the commands that read metadata and the tokenizer
// without running the model (inspect, tokenize, template).
Result<GgufFile> open_model_file(const std::string& path);

}  // namespace pagoda
