#include "engine_flags.h"

#include "commands.h"
#include "kv/kv_pool.h"

namespace pagoda::cli {

void add_kv_cache_dtype_flag(CLI::App& cmd, std::string& dtype) {
  cmd.add_option("--kv-cache-dtype", dtype, "K/V element type: f32, f16 (default), bf16 or q8_0")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}, CLI::ignore_case));
}

void add_device_flag(CLI::App& cmd, std::string& device) {
  cmd.add_option("--device", device,
                 "Where the forward pass and the KV cache run: cpu (default) or cuda (an NVIDIA GPU; needs a build "
                 "with -DPAGODA_CUDA=ON, Llama-family F32/F16/BF16 weights; not yet run on a GPU: docs/kernels.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}, CLI::ignore_case));
}

void add_engine_flags(CLI::App& cmd, EngineFlags& f) {
  add_kv_cache_dtype_flag(cmd, f.kv_cache_dtype);
  add_device_flag(cmd, f.device);
  cmd.add_option("--block-size", f.block_size, "KV block size in tokens (default 16)")->check(CLI::Range(1, 4096));
  auto* nb = cmd.add_option("--num-blocks", f.num_blocks, "KV pool size in blocks (default: from --kv-cache-mem)")
                 ->check(CLI::Range(int64_t{1}, int64_t{1} << 31));
  cmd.add_option("--kv-cache-mem", f.kv_cache_mem, "KV pool size as memory, e.g. 2GiB (default 1GiB)")->excludes(nb);
  cmd.add_option("--max-num-seqs", f.max_num_seqs, "Most sequences running at once (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--max-num-batched-tokens", f.max_num_batched_tokens, "Token budget of one step (default 2048)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--long-prefill-token-threshold", f.long_prefill_token_threshold,
                 "Most tokens of one prompt prefilled per step at its start, N*512/(512+position) deeper in, so "
                 "long prompts share steps with short ones (default 0: up to the step's budget)")
      ->check(CLI::Range(0, 1 << 20));
  cmd.add_option("--aging-horizon", f.aging_horizon_s,
                 "Seconds of waiting a full-context prompt, or one priority step, costs in the admission order "
                 "(default 20; docs/engine.md \"Sharing between tenants\")")
      ->check(finite_range(0.001, 86400));
  cmd.add_option("--max-model-len", f.max_model_len,
                 "Most tokens per sequence, prompt included (default: the model's training context)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 31));
  cmd.add_flag("--no-enable-prefix-caching", f.no_prefix_caching,
               "Never reuse K/V of earlier prompts (forks of one request still share)");
  cmd.add_flag("--no-parallel-masks", f.no_parallel_masks,
               "Compute grammar masks when sampling, not on their own thread during the forward pass");
  auto* ws = cmd.add_option("--warm-start", f.warm_start,
                             "Warm start (docs/warm-start.md): maps from `pagoda warmstart fit`; off by default")
                  ->check(CLI::ExistingFile);
  auto* wl = cmd.add_option("--warm-start-library", f.warm_start_library,
                             "Warm start: library folder from `pagoda warmstart library`")
                  ->check(CLI::ExistingDirectory);
  auto* wt = cmd.add_option("--warm-start-threshold", f.warm_start_threshold,
                             "Warm start: cosine similarity needed for a hit (default 0.9)")
                  ->check(finite_range(-1, 1));
  ws->needs(wl);
  wl->needs(ws);
  wt->needs(ws);
  add_threads_flag(cmd, f.threads);
}

Status attach_warm_start(const EngineFlags& f, const Model& model, EngineConfig& c) {
  if (f.warm_start.empty()) return Status::success();
  warmstart::WarmStartConfig wc;
  wc.maps_path = f.warm_start;
  wc.library_dir = f.warm_start_library;
  wc.threshold = f.warm_start_threshold;
  auto service = warmstart::WarmStartService::open(model, wc);
  if (!service.ok()) return make_error("--warm-start: " + service.error().message);
  c.warm_start = std::shared_ptr<warmstart::WarmStartService>(std::move(*service));
  return Status::success();
}

Result<EngineConfig> engine_config(const EngineFlags& f, const std::string& model_path) {
  EngineConfig c;
  c.block_size = f.block_size;
  c.num_blocks = f.num_blocks;
  if (!f.kv_cache_mem.empty()) {
    auto bytes = parse_memory_size(f.kv_cache_mem);
    if (!bytes.ok()) return make_error("--kv-cache-mem: " + bytes.error().message);
    c.kv_cache_bytes = *bytes;
  }
  auto dtype = parse_kv_dtype(f.kv_cache_dtype);
  if (!dtype.ok()) return make_error("--kv-cache-dtype: " + dtype.error().message);
  c.kv_cache_dtype = *dtype;
  auto device = parse_device(f.device);
  if (!device.ok()) return make_error("--device: " + device.error().message);
  c.device = *device;
  c.max_num_seqs = f.max_num_seqs;
  c.max_num_batched_tokens = f.max_num_batched_tokens;
  c.long_prefill_token_threshold = f.long_prefill_token_threshold;
  c.aging_horizon_s = f.aging_horizon_s;
  c.max_model_len = f.max_model_len;
  c.num_threads = f.threads;
  c.enable_prefix_caching = !f.no_prefix_caching;
  c.parallel_masks = !f.no_parallel_masks;
  c.model_id = model_path;
  return c;
}

}  // namespace pagoda::cli
