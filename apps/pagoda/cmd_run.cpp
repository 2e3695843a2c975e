// pagoda run MODEL.gguf -p TEXT [-n N] [--temp T] [--top-k K] [--top-p P] [--seed S] [--format text|json] [--no-echo]
//            [--kv-cache-dtype f32|f16|bf16|q8_0] [--device cpu|cuda]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "commands.h"
#include "default_model.h"
#include "engine_flags.h"
#include "engine/sequence_runner.h"
#include "model/model.h"
#include "tokenizer/streaming_detokenizer.h"

namespace pagoda::cli {
namespace {

constexpr int64_t kDefaultMaxContext = 4096;

struct RunOptions {
  std::string model_path;
  std::string prompt;
  int64_t n_predict = 128;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  std::optional<uint64_t> seed;
  int64_t ctx_size = 0;
  std::string format = "text";
  int threads = 1;
  bool no_echo = false;
  std::string kv_cache_dtype = "f16";
  std::string device = "cpu";
};

int run(const RunOptions& o) {
  auto model = Model::load(o.model_path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  const Tokenizer& tok = m.tokenizer();
  const std::vector<int32_t> prompt_ids = tok.encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  // The default context is the model's, capped like llama.cpp's default so that a long-context model does
  // not reserve a huge KV cache for a short prompt.
  const int64_t n_ctx_train = m.hparams().n_ctx_train;
  if (o.ctx_size > n_ctx_train)
    return fail("--ctx-size " + std::to_string(o.ctx_size) + " exceeds the model's training context of " +
                std::to_string(n_ctx_train));
  const int64_t n_ctx = o.ctx_size > 0 ? o.ctx_size : std::min<int64_t>(n_ctx_train, kDefaultMaxContext);
  if (prompt_ids.empty()) return fail("the prompt is empty");
  if (static_cast<int64_t>(prompt_ids.size()) > n_ctx)
    return fail("the prompt has " + std::to_string(prompt_ids.size()) + " tokens, more than the context size of " +
                std::to_string(n_ctx));

  auto kv_dtype = parse_kv_dtype(o.kv_cache_dtype);
  if (!kv_dtype.ok()) return fail("--kv-cache-dtype: " + kv_dtype.error().message);
  if (auto st = check_kv_head_dim(*kv_dtype, m.hparams().head_dim); !st.ok()) return fail(st.error().message);
  if (auto kv_bytes = ContiguousKvCache::check_size(m.hparams(), n_ctx, *kv_dtype); !kv_bytes.ok())
    return fail(kv_bytes.error().message);
  auto device = parse_device(o.device);
  if (!device.ok()) return fail("--device: " + device.error().message);
  ThreadPool pool(o.threads);
  auto made = SequenceRunner::create(m, pool, n_ctx, *kv_dtype, *device);
  if (!made.ok()) return fail(made.error().message);
  SequenceRunner& runner = **made;
  GenerateOptions gen;
  gen.max_new_tokens = o.n_predict;
  gen.sampling.temperature = o.temperature;
  gen.sampling.top_k = o.top_k;
  gen.sampling.top_p = o.top_p;
  gen.sampling.seed = o.seed ? *o.seed : std::random_device{}();

  const bool stream_text = o.format == "text";
  // The prompt first, as llama.cpp's tools print it, so that the continuation reads as one text.
  if (stream_text && !o.no_echo) {
    std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
    std::fflush(stdout);
  }
  StreamingDetokenizer detok(tok);
  std::string text;
  const auto start = std::chrono::steady_clock::now();
  auto ids = o.n_predict == 0 ? Result<std::vector<int32_t>>(std::vector<int32_t>{})
                              : generate(runner, prompt_ids, gen, [&](int32_t id) {
                                  const std::string piece = detok.push(id);
                                  text += piece;
                                  if (stream_text) {
                                    std::fwrite(piece.data(), 1, piece.size(), stdout);
                                    std::fflush(stdout);
                                  }
                                });
  if (!ids.ok()) return fail(ids.error().message);
  const std::string rest = detok.flush();
  text += rest;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stream_text) {
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);  // the statistics line on stderr starts on a line of its own
    std::fflush(stdout);
  } else {
    nlohmann::ordered_json out = {{"prompt_ids", prompt_ids}, {"ids", *ids}, {"text", text}};
    std::printf("%s\n", json_line(out).c_str());
  }
  std::fprintf(stderr, "pagoda: %zu prompt tokens, %zu generated in %.2f s (%.1f tok/s)\n", prompt_ids.size(),
               ids->size(), seconds, seconds > 0 ? (prompt_ids.size() + ids->size()) / seconds : 0.0);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streaming it to stdout");
  cmd->add_option("model", opts->model_path, "Model: a GGUF file or a Hugging Face folder (default: SmolLM2, see README)");
  cmd->add_option("-p,--prompt", opts->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", opts->n_predict, "Tokens to generate (default 128)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--temp", opts->temperature, "Sampling temperature; 0 is greedy (default 0.8)")
      ->check(finite_range(0.0, 100.0));
  cmd->add_option("--top-k", opts->top_k, "Keep the K most likely tokens; 0 keeps all (default 40)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--top-p", opts->top_p, "Nucleus sampling mass (default 0.95)")->check(finite_range(0.0, 1.0));
  cmd->add_option("--seed", opts->seed, "Random seed (default: random)")->check(uint64_text());
  cmd->add_option("-c,--ctx-size", opts->ctx_size, "Context size in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--no-echo", opts->no_echo, "Print only the continuation, not the prompt before it (text format)");
  add_kv_cache_dtype_flag(*cmd, opts->kv_cache_dtype);
  add_device_flag(*cmd, opts->device);
  add_threads_flag(*cmd, opts->threads);
  cmd->callback([opts, &action] {
    action = [opts] {
      auto path = resolve_model_path(opts->model_path);  // no MODEL: the default model
      if (!path.ok()) return fail(path.error().message);
      opts->model_path = *path;
      return run(*opts);
    };
  });
}

}  // namespace pagoda::cli
