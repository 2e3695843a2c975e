// pagoda perplexity [MODEL] -f TEXT [-c 512] [--chunks N] [--kv-cache-dtype f16|f32|bf16|q8_0] [--format text|json]
// The perplexity of MODEL over the text file, computed as llama.cpp's llama-perplexity does (engine/perplexity.h).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "default_model.h"
#include "engine/perplexity.h"
#include "engine_flags.h"
#include "kv/kv_dtype.h"
#include "model/model.h"

namespace pagoda::cli {
namespace {

struct PerplexityCliOptions {
  std::string model_path;
  std::string text_file;
  int64_t ctx = 512;
  int64_t chunks = -1;
  std::string kv_cache_dtype = "f16";
  std::string format = "text";
  int threads = 1;
};

int perplexity_command(const PerplexityCliOptions& o) {
  auto path = resolve_model_path(o.model_path);
  if (!path.ok()) return fail(path.error().message);
  std::ifstream in(o.text_file, std::ios::binary);
  if (!in) return fail("-f: cannot read " + o.text_file);
  std::stringstream text;
  text << in.rdbuf();
  auto model = Model::load(*path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  if (o.ctx > m.hparams().n_ctx_train)
    return fail("-c " + std::to_string(o.ctx) + " exceeds the model's training context of " +
                std::to_string(m.hparams().n_ctx_train));
  auto kv_dtype = parse_kv_dtype(o.kv_cache_dtype);
  if (!kv_dtype.ok()) return fail("--kv-cache-dtype: " + kv_dtype.error().message);
  if (auto st = check_kv_head_dim(*kv_dtype, m.hparams().head_dim); !st.ok()) return fail(st.error().message);
  const Tokenizer& tok = m.tokenizer();
  if (tok.add_eos()) return fail("the model appends EOS to every text; llama-perplexity refuses such a model too");
  // As llama-perplexity: BOS first when the model adds one, special-token text read as plain text.
  const std::vector<int32_t> tokens = tok.encode(text.str(), /*add_special=*/true, /*parse_special=*/false);
  const int32_t bos = tok.add_bos() && tok.bos() ? *tok.bos() : -1;
  ThreadPool pool(o.threads);
  SequenceRunner runner(m, pool, o.ctx, *kv_dtype);
  PerplexityOptions opts;
  opts.n_ctx = o.ctx;
  opts.max_chunks = o.chunks;
  const bool json = o.format == "json";
  std::fprintf(stderr, "pagoda: perplexity of %s over %s: %zu tokens, chunks of %lld, KV %s\n", path->c_str(),
               o.text_file.c_str(), tokens.size(), static_cast<long long>(o.ctx), o.kv_cache_dtype.c_str());
  auto r = perplexity(runner, tokens, bos, opts, [&](int64_t i, double ppl) {
    std::fprintf(json ? stderr : stdout, "[%lld]%.4f,", static_cast<long long>(i + 1), ppl);
    std::fflush(json ? stderr : stdout);
  });
  std::fputc('\n', json ? stderr : stdout);
  if (!r.ok()) return fail(r.error().message);
  if (json) {
    nlohmann::ordered_json out = {{"model", *path},           {"text", o.text_file},
                                  {"n_ctx", o.ctx},           {"kv_cache_dtype", o.kv_cache_dtype},
                                  {"tokens", r->text_tokens}, {"chunks", r->chunks},
                                  {"scored_tokens", r->scored_tokens}, {"nll", r->nll},
                                  {"ppl", r->ppl},            {"ppl_error", r->ppl_error}};
    std::printf("%s\n", json_line(out).c_str());
  } else {
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r->ppl, r->ppl_error);
  }
  return 0;
}

}  // namespace

void add_perplexity_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<PerplexityCliOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity over a text file, as llama.cpp's llama-perplexity");
  cmd->add_option("model", opts->model_path, "Model: a GGUF file or a Hugging Face folder (default: SmolLM2, see README)");
  cmd->add_option("-f,--file", opts->text_file, "The text file")->required();
  cmd->add_option("-c,--ctx-size", opts->ctx, "Chunk length in tokens; the second half of each is scored (default 512)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  cmd->add_option("--chunks", opts->chunks, "Score at most N chunks (default: all)")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  add_kv_cache_dtype_flag(*cmd, opts->kv_cache_dtype);
  add_threads_flag(*cmd, opts->threads);
  cmd->callback([opts, &action] { action = [opts] { return perplexity_command(*opts); }; });
}

}  // namespace pagoda::cli
