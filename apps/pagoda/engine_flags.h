// The engine flags shared by `batch`, `bench --concurrency` (and `serve` next): KV pool size and block size,
// scheduler limits.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/engine.h"
#include "util/result.h"

namespace pagoda::cli {

struct EngineFlags {
  int32_t block_size = 16;
  int64_t num_blocks = 0;
  std::string kv_cache_mem;  // e.g. "2GiB"
  std::string kv_cache_dtype = "f16";
  std::string device = "cpu";
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t long_prefill_token_threshold = 0;
  double aging_horizon_s = 20;
  int64_t max_model_len = 0;
  int threads = 1;
  bool no_prefix_caching = false;
  bool no_parallel_masks = false;
  std::string warm_start;          // maps file (warm start off when empty)
  std::string warm_start_library;  // library folder
  double warm_start_threshold = 0.9;
};

void add_engine_flags(CLI::App& cmd, EngineFlags& flags);
// --kv-cache-dtype f32|f16|bf16|q8_0 (also for `run`, which has no engine).
void add_kv_cache_dtype_flag(CLI::App& cmd, std::string& dtype);
// --device cpu|cuda (also for `run`).
void add_device_flag(CLI::App& cmd, std::string& device);

// The engine configuration the flags describe (an Error for a bad --kv-cache-mem).
Result<EngineConfig> engine_config(const EngineFlags& flags, const std::string& model_path);

// With --warm-start: loads the maps and library for `model` into config.warm_start (an Error names a bad file).
Status attach_warm_start(const EngineFlags& flags, const Model& model, EngineConfig& config);

}  // namespace pagoda::cli
