// pagoda bench MODEL.gguf [-p 128] [-n 64] [--threads T] [--reps R] [--format json]
//                         [--concurrency C [engine flags]] [--cached-prefix K] [--attention fused|reference]
// Like llama-bench's pp/tg: prefill speed for a P-token prompt, decode speed over N tokens, each the
// median of R repetitions after one warm-up run.
//   --concurrency C: C sequences with distinct P-token prompts generate N tokens each, together through the
//     engine; aggregate prefill tok/s (all prompts until every sequence has its first token) and aggregate decode
//     tok/s (the remaining N - 1 tokens of every sequence over the time they took), as llama-batched-bench does.
//   --cached-prefix K: time to first token of a P-token request whose first K tokens are in the prefix cache,
//     against the same request cold.
// `pagoda bench serve` (a load generator for a running server) is in cmd_bench_serve.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cmd_bench_anchor_memory.h"
#include "cmd_bench_anchors.h"
#include "cmd_bench_serve.h"
#include "anchor/anchor_payload.h"
#include "anchor/dsse_envelope.h"
#include "anchor_setup.h"
#include "util/atomic_file.h"
#include "api/output_constraint.h"
#include "commands.h"
#include "perf/roofline.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "engine/sequence_runner.h"
#include "engine_flags.h"
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
  int32_t concurrency = 0;
  int64_t cached_prefix = 0;
  int64_t shared_prefix = 0;  // with --concurrency: every prompt starts with the same this many tokens
  std::string attention = "fused";
  bool no_roofline = false;
  EngineFlags engine;
  std::string anchor_trust_root;          // with --anchor: every request starts from the (first) anchor
  std::vector<std::string> anchor_files;
  std::string constraint_file;  // with --concurrency: structured-output fields every request carries
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using BenchClock = std::chrono::steady_clock;

double seconds_between(BenchClock::time_point a, BenchClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::vector<int32_t> random_prompt(Rng& rng, int64_t n, int32_t n_vocab) {
  std::vector<int32_t> prompt(n);
  for (auto& id : prompt) id = static_cast<int32_t>(rng.next_u64() % n_vocab);
  return prompt;
}

Result<std::unique_ptr<Engine>> make_engine(const Model& m, const BenchOptions& o) {
  auto config = engine_config(o.engine, o.model_path);
  if (!config.ok()) return config.error();
  config->num_threads = o.threads;
  config->attention = o.attention == "reference" ? AttentionImpl::kReference : AttentionImpl::kFused;
  // The KV pool resident before the clock starts, as `pagoda serve` makes it (and as llama.cpp clears its KV buffer
  // at creation): otherwise the first touch of each page is zeroed by the kernel inside the timed steps (16-way
  // decode of the 134M F16 model: about 4% of the step, docs/PERFORMANCE.md).
  config->prefault_kv = true;
  PAGODA_RETURN_IF_ERROR(attach_warm_start(o.engine, m, *config));
  return Engine::create(m, *config);
}

bool has_token(RequestStream& s, bool* finished, int64_t* count = nullptr) {
  StreamEvent ev;
  bool token = false;
  while (s.try_next(&ev)) {
    if (ev.kind == StreamEvent::Kind::kToken) {
      token = true;
      if (count) ++*count;
    }
    if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError && finished) *finished = true;
  }
  return token;
}

int run_concurrent(const Model& m, const BenchOptions& o) {
  auto engine = make_engine(m, o);
  if (!engine.ok()) return fail(engine.error().message);
  Engine& e = **engine;
  // Anchors are verified and pinned by the engine's own thread (activation waits for it); the benchmark then
  // steps the engine by hand.
  std::unique_ptr<AnchorService> anchors;
  std::string anchor_digest;
  int64_t anchor_tokens = 0;
  if (!o.anchor_files.empty()) {
    e.start();
    auto started = start_anchor_service(AnchorSetup{o.anchor_trust_root, {}, o.anchor_files, 1 << 20}, o.model_path,
                                        m, e);
    e.stop();
    if (!started.ok()) return fail(started.error().message);
    anchors = std::move(*started);
    // The first file's anchor (it verified: its digest is that of its payload).
    auto text = read_small_file(o.anchor_files.front(), kMaxEnvelopeBytes);
    auto envelope = text.ok() ? parse_dsse_envelope(*text) : Result<DsseEnvelope>(text.error());
    if (!envelope.ok()) return fail(envelope.error().message);
    anchor_digest = pagoda::anchor_digest(envelope->payload);
    auto record = anchors->registry().get(anchor_digest);
    if (!record) return fail("anchor " + anchor_digest + " is not registered");
    anchor_tokens = static_cast<int64_t>(record->tokens.size());
  }
  // --constraint: the grammar every request carries, compiled once (as the server's cache does); the compile
  // time is reported on its own, cold and cached.
  std::shared_ptr<const grammar::CompiledGrammar> constraint;
  double compile_cold_ms = 0, compile_cached_ms = 0;
  if (!o.constraint_file.empty()) {
    auto text = read_small_file(o.constraint_file, 1 << 20);
    if (!text.ok()) return fail(text.error().message);
    const auto body = nlohmann::ordered_json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return fail(o.constraint_file + ": not a JSON object of constraint fields");
    for (int pass = 0; pass < 2; ++pass) {
      const auto c0 = BenchClock::now();
      auto compiled = read_output_constraint(body, m.tokenizer());
      const double ms = seconds_between(c0, BenchClock::now()) * 1000;
      if (!compiled.ok()) return fail(o.constraint_file + ": " + compiled.error().message);
      if (!*compiled) return fail(o.constraint_file + ": no constraint field (response_format, json_schema, grammar, guided_choice)");
      constraint = *compiled;
      (pass == 0 ? compile_cold_ms : compile_cached_ms) = ms;
    }
  }
  std::vector<double> prefill_rates, decode_rates;
  Rng rng(1234);
  for (int rep = 0; rep <= o.reps; ++rep) {
    std::vector<std::shared_ptr<RequestStream>> streams;
    // A prefix shared by this round's prompts (new each round, so a round never hits the last one's cache).
    const std::vector<int32_t> shared = random_prompt(rng, o.shared_prefix, m.hparams().n_vocab);
    const auto t0 = BenchClock::now();
    for (int32_t c = 0; c < o.concurrency; ++c) {
      GenerationRequest r;
      r.prompt = shared;
      const auto own = random_prompt(rng, o.n_prompt, m.hparams().n_vocab);  // distinct after the shared prefix
      r.prompt.insert(r.prompt.end(), own.begin(), own.end());
      r.anchor = anchor_digest;  // the anchor's tokens come first, from its pinned blocks
      r.max_tokens = std::max<int64_t>(o.n_gen, 1);
      r.sampling.temperature = 0.0f;
      r.ignore_eos = true;
      r.grammar = constraint;
      streams.push_back(e.submit(std::move(r)));
    }
    std::vector<bool> first(streams.size(), false);
    size_t with_first = 0;
    BenchClock::time_point t1{};
    bool failed = false;
    int64_t tokens = 0, tokens_at_t1 = 0;
    while (e.step()) {
      for (size_t i = 0; i < streams.size(); ++i)
        if (has_token(*streams[i], &failed, &tokens) && !first[i]) {
          first[i] = true;
          if (++with_first == streams.size()) t1 = BenchClock::now();
        }
      if (with_first == streams.size() && tokens_at_t1 == 0) tokens_at_t1 = tokens;
    }
    for (auto& st : streams) has_token(*st, &failed, &tokens);
    const auto t2 = BenchClock::now();
    if (failed || with_first != streams.size()) return fail("a benchmark request failed (is the KV pool too small?)");
    if (rep == 0) continue;
    prefill_rates.push_back(static_cast<double>(o.concurrency) * o.n_prompt / seconds_between(t0, t1));
    // Tokens actually generated after every sequence had its first (a grammar may end a choice early).
    if (o.n_gen > 1) decode_rates.push_back(static_cast<double>(tokens - tokens_at_t1) / seconds_between(t1, t2));
  }
  const double pp = median(prefill_rates);
  const double tg = decode_rates.empty() ? 0.0 : median(decode_rates);
  const EngineStats st = e.stats();
  if (o.format == "json") {
    nlohmann::ordered_json out = {
        {"model", o.model_path},         {"concurrency", o.concurrency}, {"prompt_tokens", o.n_prompt},
        {"gen_tokens", o.n_gen},         {"threads", o.threads},         {"reps", o.reps},
        {"isa", matmul_isa_name()},      {"attention", o.attention},     {"block_size", st.block_size},
        {"kv_cache_dtype", kv_dtype_name(e.pool_shape().dtype)},
        {"preemptions", st.preemptions}, {"prefill_tok_s", pp},          {"decode_tok_s", tg}};
    if (o.engine.device != "cpu") out["device"] = o.engine.device;  // the CPU's format is unchanged
    if (!anchor_digest.empty()) out["anchor_tokens"] = anchor_tokens;  // only with --anchor: the format is unchanged
    if (o.shared_prefix > 0) out["shared_prefix_tokens"] = o.shared_prefix;
    if (constraint) {
      out["constraint"] = o.constraint_file;
      out["compile_ms"] = compile_cold_ms;
      out["compile_cached_ms"] = compile_cached_ms;
      out["mask_cache_hits"] = constraint->cache().hits();
      out["mask_cache_misses"] = constraint->cache().misses();
    }  // only with --anchor: the format is unchanged
    std::printf("%s\n", json_line(out).c_str());
  } else {
    std::printf("model: %s, concurrency %d, threads: %d, isa: %s, attention: %s, reps: %d\n", o.model_path.c_str(),
                o.concurrency, o.threads, matmul_isa_name(), o.attention.c_str(), o.reps);
    std::printf("%s\n", e.describe().c_str());
    if (!anchor_digest.empty())
      std::printf("anchor %s: %lld tokens before every prompt, from pinned blocks (not in the prefill rate)\n",
                  anchor_digest.c_str(), static_cast<long long>(anchor_tokens));
    std::printf("prefill %d x pp%lld: %10.1f tok/s (aggregate)\n", o.concurrency, (long long)o.n_prompt, pp);
    std::printf("decode  %d x tg%lld: %10.1f tok/s (aggregate)\n", o.concurrency, (long long)o.n_gen, tg);
  }
  return 0;
}

// Time from submission to the first token of one request, stepping the engine on this thread.
Result<double> time_to_first_token(Engine& e, GenerationRequest r) {
  r.max_tokens = 1;
  r.sampling.temperature = 0.0f;
  const auto t0 = BenchClock::now();
  auto stream = e.submit(std::move(r));
  bool failed = false;
  while (e.step()) {
    if (has_token(*stream, &failed)) {
      const double s = seconds_between(t0, BenchClock::now());
      e.run_until_idle();
      return s;
    }
  }
  return make_error("the benchmark request failed (is the KV pool too small?)");
}

int run_prefix_cache(const Model& m, const BenchOptions& o) {
  if (o.cached_prefix >= o.n_prompt) return fail("--cached-prefix must be smaller than -p");
  auto engine = make_engine(m, o);
  if (!engine.ok()) return fail(engine.error().message);
  Engine& e = **engine;
  Rng rng(99);
  std::vector<double> cold, cached;
  for (int rep = 0; rep <= o.reps; ++rep) {
    GenerationRequest target;
    target.prompt = random_prompt(rng, o.n_prompt, m.hparams().n_vocab);
    // Cold: a namespace nothing has used.
    target.cache_salt = "cold-" + std::to_string(rep);
    auto t_cold = time_to_first_token(e, target);
    if (!t_cold.ok()) return fail(t_cold.error().message);
    // Cached: an earlier request with the same first K tokens (and a different tail) primes the cache.
    GenerationRequest primer = target;
    primer.cache_salt = "warm-" + std::to_string(rep);
    auto tail = random_prompt(rng, o.n_prompt - o.cached_prefix, m.hparams().n_vocab);
    std::copy(tail.begin(), tail.end(), primer.prompt.begin() + o.cached_prefix);
    if (auto p = time_to_first_token(e, primer); !p.ok()) return fail(p.error().message);
    target.cache_salt = primer.cache_salt;
    auto t_cached = time_to_first_token(e, target);
    if (!t_cached.ok()) return fail(t_cached.error().message);
    if (rep == 0) continue;
    cold.push_back(*t_cold * 1e3);
    cached.push_back(*t_cached * 1e3);
  }
  const double c = median(cold), w = median(cached);
  const EngineStats st = e.stats();
  if (o.format == "json") {
    nlohmann::ordered_json out = {{"model", o.model_path},
                                  {"prompt_tokens", o.n_prompt},
                                  {"cached_prefix_tokens", o.cached_prefix},
                                  {"threads", o.threads},
                                  {"reps", o.reps},
                                  {"block_size", st.block_size},
                                  {"ttft_cold_ms", c},
                                  {"ttft_cached_ms", w},
                                  {"cached_over_cold", w / c},
                                  {"prefix_hit_tokens", st.blocks.prefix_hit_tokens}};
    std::printf("%s\n", json_line(out).c_str());
  } else {
    std::printf("model: %s, prompt %lld tokens, first %lld cached, threads: %d, reps: %d\n", o.model_path.c_str(),
                (long long)o.n_prompt, (long long)o.cached_prefix, o.threads, o.reps);
    std::printf("time to first token: cold %.2f ms, cached prefix %.2f ms (%.1f%% of cold)\n", c, w, 100.0 * w / c);
  }
  return 0;
}

int run_single(const Model& m, const BenchOptions& o, double load_s);

int run(const BenchOptions& o) {
  if (o.isa != "auto" && !kernels::force_matmul_isa(o.isa.c_str()))
    return fail("--isa " + o.isa + " is not supported by this CPU");
  const auto load_start = std::chrono::steady_clock::now();
  auto model = Model::load(o.model_path);
  if (!model.ok()) return fail(model.error().message);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const Model& m = **model;
  if (!o.anchor_files.empty() && (o.concurrency == 0 || o.anchor_trust_root.empty()))
    return fail("--anchor needs --concurrency and --anchor-trust-root");
  if (o.concurrency > 0) return run_concurrent(m, o);
  if (o.cached_prefix > 0) return run_prefix_cache(m, o);
  return run_single(m, o, load_s);
}

// One sequence: prefill and decode rates, and the decode roofline.
int run_single(const Model& m, const BenchOptions& o, double load_s) {
  const int64_t n_ctx = o.n_prompt + o.n_gen;
  if (n_ctx > m.hparams().n_ctx_train)
    return fail("-p + -n = " + std::to_string(n_ctx) + " exceeds the model's context of " +
                std::to_string(m.hparams().n_ctx_train));
  auto kv_dtype = parse_kv_dtype(o.engine.kv_cache_dtype);
  if (!kv_dtype.ok()) return fail("--kv-cache-dtype: " + kv_dtype.error().message);
  if (auto st = check_kv_head_dim(*kv_dtype, m.hparams().head_dim); !st.ok()) return fail(st.error().message);
  if (auto kv_bytes = ContiguousKvCache::check_size(m.hparams(), n_ctx, *kv_dtype); !kv_bytes.ok())
    return fail(kv_bytes.error().message);
  auto device = parse_device(o.engine.device);
  if (!device.ok()) return fail("--device: " + device.error().message);
  ThreadPool pool(o.threads);
  auto made = SequenceRunner::create(m, pool, n_ctx, *kv_dtype, *device);
  if (!made.ok()) return fail(made.error().message);
  SequenceRunner& runner = **made;
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
  // The decode roofline at the mean context of the decode steps (perf/roofline.h).
  const DecodeCost cost = decode_cost(m, *kv_dtype, o.n_prompt + o.n_gen / 2);
  const uint64_t bytes_per_token = cost.weight_bytes + cost.kv_bytes;
  Roofline roof;
  // The roofline measured here is the CPU's (its read bandwidth and kernels); on a device, bytes per token only.
  const bool measure_roofline = !o.no_roofline && o.n_gen > 0 && *device == Device::kCpu;
  if (measure_roofline) roof = decode_roofline(m, cost, pool);
  if (o.format == "json") {
    nlohmann::ordered_json out = {
        {"model", o.model_path}, {"format", m.format()}, {"load_s", load_s}, {"prompt_tokens", o.n_prompt}, {"gen_tokens", o.n_gen},        {"threads", o.threads},
        {"reps", o.reps},        {"isa", matmul_isa_name()},    {"weight_bytes", weight_bytes},
        {"kv_cache_dtype", kv_dtype_name(*kv_dtype)}, {"decode_bytes_per_token", bytes_per_token},
        {"decode_ops_per_token", cost.ops}, {"prefill_tok_s", pp}, {"decode_tok_s", tg}};
    if (*device != Device::kCpu) out["device"] = device_name(*device);
    if (measure_roofline) {
      out["read_bandwidth_gb_s"] = roof.bandwidth / 1e9;
      out["bandwidth_bound_tok_s"] = roof.bandwidth_bound;
      out["compute_bound_tok_s"] = roof.compute_bound;
      out["roofline_limit"] = roof.limit();
      out["decode_of_bandwidth_bound"] = tg / roof.bandwidth_bound;
      out["decode_of_compute_bound"] = tg / roof.compute_bound;
      out["decode_of_roofline"] = tg / roof.bound();
    }
    std::printf("%s\n", json_line(out).c_str());
  } else {
    std::printf("model: %s (%s, %.1f MiB of weights, loaded in %.3f s), threads: %d, isa: %s, kv cache: %s, reps: %d, "
                "device: %s\n",
                o.model_path.c_str(), m.format().c_str(), weight_bytes / 1048576.0, load_s, o.threads,
                matmul_isa_name(), kv_dtype_name(*kv_dtype), o.reps, device_name(*device));
    std::printf("prefill pp%lld: %10.1f tok/s\n", (long long)o.n_prompt, pp);
    std::printf("decode  tg%lld: %10.1f tok/s\n", (long long)o.n_gen, tg);
    std::printf("decode per token: %.1f MiB read (%.1f weights + %.1f K/V at context %lld), %.2f Gop\n",
                bytes_per_token / 1048576.0, cost.weight_bytes / 1048576.0, cost.kv_bytes / 1048576.0,
                (long long)(o.n_prompt + o.n_gen / 2), cost.ops / 1e9);
    if (measure_roofline)
      std::printf("roofline: read bandwidth %.1f GB/s -> %.1f tok/s; matmul kernels in cache -> %.1f tok/s; "
                  "decode at %.0f%% of the %s bound (%.0f%% of bandwidth, %.0f%% of compute)\n",
                  roof.bandwidth / 1e9, roof.bandwidth_bound, roof.compute_bound, 100 * tg / roof.bound(),
                  roof.limit(), 100 * tg / roof.bandwidth_bound, 100 * tg / roof.compute_bound);
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode speed");
  cmd->add_option("model", opts->model_path, "Model: a GGUF file or a Hugging Face folder");  // required unless `bench serve`
  cmd->add_option("-p,--n-prompt", opts->n_prompt, "Prompt tokens (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("-n,--n-gen", opts->n_gen, "Generated tokens (default 64)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("-r,--reps", opts->reps, "Repetitions after the warm-up (default 5)")->check(CLI::Range(1, 1000));
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--isa", opts->isa, "Matmul kernel: auto (PAGODA_ISA or the widest available), avx512, avx2, portable")
      ->check(CLI::IsMember({"auto", "avx512", "avx2", "portable", "scalar"}));
  auto* conc = cmd->add_option("--concurrency", opts->concurrency,
                               "Run C sequences together through the engine (aggregate tok/s)")
                   ->check(CLI::Range(1, 4096));
  cmd->add_option("--shared-prefix", opts->shared_prefix,
                  "With --concurrency: every prompt starts with the same N tokens, then -p tokens of its own "
                  "(prefill rate counts the -p tokens)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->needs(conc);
  cmd->add_option("--constraint", opts->constraint_file,
                  "With --concurrency: a JSON file of structured-output fields every request carries, e.g. "
                  "{\"json_schema\": {...}} (decode tok/s counts the tokens generated)")
      ->check(CLI::ExistingFile)
      ->needs(conc);
  cmd->add_option("--cached-prefix", opts->cached_prefix,
                  "Time to first token with the first K prompt tokens cached, against cold")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->excludes(conc);
  cmd->add_flag("--no-roofline", opts->no_roofline,
                "Skip measuring read bandwidth and kernel rates (the decode roofline, a few seconds)");
  cmd->add_option("--attention", opts->attention, "Engine attention kernel: fused (default) or reference")
      ->check(CLI::IsMember({"fused", "reference"}));
  cmd->add_option("--anchor-trust-root", opts->anchor_trust_root, "With --anchor: the trust root (see `serve`)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--anchor", opts->anchor_files,
                  "With --concurrency: verify and activate these anchors first (repeatable); every request starts "
                  "from the first one")
      ->check(CLI::ExistingFile);
  add_engine_flags(*cmd, opts->engine);
  add_bench_serve_command(*cmd, action);
  add_bench_anchors_command(*cmd, action);
  add_bench_anchor_memory_command(*cmd, action);
  cmd->callback([opts, cmd, &action] {
    // CLI11 runs this after the `serve` subcommand's callback, which has set the action.
    if (!cmd->get_subcommands().empty()) return;
    if (opts->model_path.empty()) throw CLI::RequiredError("model");
    opts->threads = opts->engine.threads;  // -t is registered with the engine flags
    action = [opts] { return run(*opts); };
  });
}

}  // namespace pagoda::cli
