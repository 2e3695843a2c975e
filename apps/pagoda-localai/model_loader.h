// LoadModel for pagoda-localai: LocalAI's ModelOptions as the model, engine and chat template `pagoda serve` would
// build from its flags.
//
//   the file     ModelFile (LocalAI joins ModelPath and Model into it); without it Model, relative to ModelPath
//                unless absolute
//   ContextSize  --max-model-len (0: the model's training context)
//   Threads      --threads (0: all cores)
//   NBatch       --max-num-batched-tokens (0: 2048)
//   Seed         the engine's seed for requests that bring none
//   Options      `pagoda serve`'s engine and chat-template flags as "name:value" strings (a flag alone, or
//                "name:true"), name with or without the leading dashes, '_' read as '-':
//                ["kv-cache-mem:2GiB", "max-num-seqs:64", "chat-template:chatml", "no-enable-prefix-caching"].
//                An unknown name or a bad value fails LoadModel with CLI11's message.
//   CacheTypeKey / CacheTypeValue  --kv-cache-dtype (f32, f16, bf16, q8_0; both alike when both are given)
// Fields that would change what the model computes and that pagoda does not implement (LoRA adapters, a
// multimodal projector, a draft model, RoPE and YaRN overrides, tensor overrides, another tokenizer, EngineArgs,
// VocabOnly) fail LoadModel naming the field. The rest say where to run (GPU layers, mmap, mlock, NUMA, flash
// attention, ...) or belong to other backends (diffusers, vLLM); pagoda runs on the CPU and reads none of them.
#pragma once

#include <memory>

#include "backend.pb.h"
#include "localai/backend_service.h"
#include "util/result.h"

namespace pagoda::cli {

Result<std::shared_ptr<localai::LoadedModel>> load_model(const backend::ModelOptions& options);

}  // namespace pagoda::cli
