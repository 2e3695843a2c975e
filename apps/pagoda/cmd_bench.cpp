// pagoda bench MODEL.gguf [-p 128] [-n 64] [--threads T] [--reps R] [--format json]
// Like llama-bench's pp/tg: prefill speed for a P-token prompt, decode speed over N tokens, each the
// median of R repetitions after one warm-up run.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "commands.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "kernels/cpu/matmul.h"
#include "model/model.h"
#include "util/rng.h"

namespace pagoda::cli {
namespace {

struct BenchOptions {
  std::string model_path;
  int64_t n_prompt = 128;
  int64_t n_gen = 64;
  int reps = 5;
  int threads = 1;
  std::string format = "text";
  std::string isa = "auto";
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const BenchOptions& o) {
  if (o.isa != "auto" && !kernels::force_matmul_isa(o.isa.c_str()))
    return fail("--isa " + o.isa + " is not supported by this CPU");
  auto model = Model::load(o.model_path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  const int64_t n_ctx = o.n_prompt + o.n_gen;
  if (n_ctx > m.hparams().n_ctx_train)
    return fail("-p + -n = " + std::to_string(n_ctx) + " exceeds the model's context of " +
                std::to_string(m.hparams().n_ctx_train));
  if (auto kv_bytes = ContiguousKvCache::check_size(m.hparams(), n_ctx); !kv_bytes.ok())
    return fail(kv_bytes.error().message);
  ThreadPool pool(o.threads);
  SequenceRunner runner(m, pool, n_ctx);
  // A fixed pseudo-random prompt, so runs are comparable.
  Rng rng(1234);
  std::vector<int32_t> prompt(o.n_prompt);
  for (auto& id : prompt) id = static_cast<int32_t>(rng.next_u64() % m.hparams().n_vocab);

  using Clock = std::chrono::steady_clock;
  std::vector<double> prefill_rates, decode_rates;
  for (int rep = 0; rep <= o.reps; ++rep) {  // rep 0 is the warm-up
    runner.reset();
    const auto t0 = Clock::now();
    auto logits = runner.eval(prompt);
    if (!logits.ok()) return fail(logits.error().message);
    const auto t1 = Clock::now();
    int32_t next = Sampler::argmax(*logits);
    for (int64_t i = 0; i < o.n_gen; ++i) {
      logits = runner.eval(std::span<const int32_t>(&next, 1));
      if (!logits.ok()) return fail(logits.error().message);
      next = Sampler::argmax(*logits);
    }
    const auto t2 = Clock::now();
    if (rep == 0) continue;
    prefill_rates.push_back(o.n_prompt / std::chrono::duration<double>(t1 - t0).count());
    if (o.n_gen > 0) decode_rates.push_back(o.n_gen / std::chrono::duration<double>(t2 - t1).count());
  }
  const double pp = median(prefill_rates);
  const double tg = decode_rates.empty() ? 0.0 : median(decode_rates);
  uint64_t weight_bytes = 0;
  for (const auto& t : m.file().tensors()) weight_bytes += t.n_bytes;
  if (o.format == "json") {
    nlohmann::ordered_json out = {
        {"model", o.model_path}, {"prompt_tokens", o.n_prompt}, {"gen_tokens", o.n_gen},        {"threads", o.threads},
        {"reps", o.reps},        {"isa", matmul_isa_name()},    {"weight_bytes", weight_bytes}, {"prefill_tok_s", pp},
        {"decode_tok_s", tg}};
    std::printf("%s\n", json_line(out).c_str());
  } else {
    std::printf("model: %s (%.1f MiB of weights), threads: %d, isa: %s, reps: %d\n", o.model_path.c_str(),
                weight_bytes / 1048576.0, o.threads, matmul_isa_name(), o.reps);
    std::printf("prefill pp%lld: %10.1f tok/s\n", (long long)o.n_prompt, pp);
    std::printf("decode  tg%lld: %10.1f tok/s\n", (long long)o.n_gen, tg);
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode speed");
  cmd->add_option("model", opts->model_path, "Model file (GGUF)")->required();
  cmd->add_option("-p,--n-prompt", opts->n_prompt, "Prompt tokens (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("-n,--n-gen", opts->n_gen, "Generated tokens (default 64)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("-r,--reps", opts->reps, "Repetitions after the warm-up (default 5)")->check(CLI::Range(1, 1000));
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--isa", opts->isa, "Matmul kernel: auto (widest available), avx512, avx2, scalar")
      ->check(CLI::IsMember({"auto", "avx512", "avx2", "scalar"}));
  add_threads_flag(*cmd, opts->threads);
  cmd->callback([opts, &action] { action = [opts] { return run(*opts); }; });
}

}  // namespace pagoda::cli
