// pagoda bench serve --base-url URL --model NAME [--concurrency C[,C2,...]] [--num-prompts N] [--input-len I]
//                    [--output-len O] [--shared-prefix-len S] [--num-prefixes K] [--prompt-text]
//                    [--request-rate R] [--seed S] [--vocab-size V]
//                    [--slo-ttft-ms X] [--slo-tpot-ms Y] [--api-key KEY] [--timeout SECONDS] [--extra-body JSON]
//                    [--format json]
//                    [--plot FILE]
// Measures a running OpenAI-compatible server (pagoda serve, llama-server, vLLM) with streamed /v1/completions
// requests, as vLLM's benchmark_serving does. For each concurrency value C, N prompts of S shared + I unique
// random token ids (the shared part one of K prefixes, drawn per prompt: several applications' system prompts
// behind one router; --prompt-text sends them as made-up words for routers that refuse ids), at most C in flight
// (Poisson arrivals at R req/s when given), each generating exactly O tokens
// (ignore_eos). Reports TTFT, TPOT, ITL and end-to-end latency (mean, median, p95, p99), throughput and goodput.
// One unmeasured request first checks that the server answers (and warms it up). --format json prints one object
// (keys in print_json and loadgen::to_json(RunSummary)); "request_rate" is null for inf, an SLO not given is null.
#include "cmd_bench_serve.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>

#include "loadgen/load_generator.h"
#include "loadgen/run_summary.h"
#include "loadgen/svg_plot.h"
#include "loadgen/workload.h"
#include "util/rng.h"

namespace pagoda::cli {
namespace {

// Arrival gaps come from their own random stream, so a request rate does not change the prompts.
constexpr uint64_t kArrivalStream = 0x9e3779b97f4a7c15ull;
constexpr int kProgressWidth = 30;

struct ServeBenchOptions {
  std::string base_url;
  std::string model;
  std::string api_key;
  std::vector<int32_t> concurrency{1};
  int64_t num_prompts = 64;
  int64_t input_len = 128;
  int64_t output_len = 64;
  int64_t shared_prefix_len = 0;
  int64_t num_prefixes = 1;
  bool prompt_text = false;
  int32_t vocab_size = 500;
  double request_rate = std::numeric_limits<double>::infinity();
  uint64_t seed = 0;
  std::optional<double> slo_ttft_ms;
  std::optional<double> slo_tpot_ms;
  double timeout_s = 600;
  std::string extra_body;  // JSON object merged into every request body
  std::string format = "text";
  std::string plot_path;
};

// One finished round: its summary, and the samples the plot draws.
struct Round {
  loadgen::RunSummary summary;
  std::vector<double> ttft_ms, e2e_ms;  // of completed requests
};

// A positive number, "inf" included (CLI::PositiveNumber rejects inf, finite_range too).
CLI::Validator positive_rate() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = parse_number(text);
        if (!v || std::isnan(*v) || *v <= 0) return "'" + text + "' is not a positive number or inf";
        return std::string();
      },
      "FLOAT > 0 or inf");
}

// "\r[#####.....] 32/64 c=16" on stderr, only when stderr is a terminal.
loadgen::ProgressFn progress_bar(int32_t concurrency) {
  if (!isatty(STDERR_FILENO)) return nullptr;
  return [concurrency](int64_t done, int64_t total) {
    const int filled = static_cast<int>(kProgressWidth * done / total);
    std::fprintf(stderr, "\r[%s%s] %lld/%lld c=%d", std::string(filled, '#').c_str(),
                 std::string(kProgressWidth - filled, '.').c_str(), (long long)done, (long long)total, concurrency);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

// Two lines: the server, then the workload.
std::string describe(const ServeBenchOptions& o) {
  char rate[32] = "inf";
  if (std::isfinite(o.request_rate)) std::snprintf(rate, sizeof rate, "%g", o.request_rate);
  const std::string shared = o.num_prefixes > 1 ? " shared (one of " + std::to_string(o.num_prefixes) + ")" : " shared";
  return o.model + " at " + o.base_url + "\n" + std::to_string(o.num_prompts) + " prompts of " +
         std::to_string(o.shared_prefix_len) + shared + " + " + std::to_string(o.input_len) + " unique " +
         (o.prompt_text ? "words (as text), " : "tokens, ") +
         std::to_string(o.output_len) + " output tokens each, request rate " + rate + " req/s";
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

void print_json(const ServeBenchOptions& o, const std::vector<Round>& rounds) {
  nlohmann::ordered_json out = {
      {"base_url", o.base_url},
      {"model", o.model},
      {"num_prompts", o.num_prompts},
      {"input_len", o.input_len},
      {"output_len", o.output_len},
      {"shared_prefix_len", o.shared_prefix_len},
      {"num_prefixes", o.num_prefixes},
      {"prompt_text", o.prompt_text},
      {"vocab_size", o.vocab_size},
      {"request_rate", std::isfinite(o.request_rate) ? nlohmann::ordered_json(o.request_rate) : nullptr},
      {"seed", o.seed},
      {"slo_ttft_ms", optional_json(o.slo_ttft_ms)},
      {"slo_tpot_ms", optional_json(o.slo_tpot_ms)},
      {"runs", nlohmann::ordered_json::array()}};
  for (const auto& r : rounds) out["runs"].push_back(loadgen::to_json(r.summary));
  std::printf("%s\n", json_line(out).c_str());
}

// A metric per row, a concurrency value per column.
void print_table(const ServeBenchOptions& o, const std::vector<Round>& rounds) {
  std::printf("pagoda bench serve: %s\n", describe(o).c_str());
  auto row = [&](const char* label, auto value) {
    std::printf("%-22s", label);
    for (const auto& r : rounds) std::printf(" %12s", value(r.summary).c_str());
    std::printf("\n");
  };
  auto fixed = [](double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  row("concurrency", [](const auto& s) { return "c=" + std::to_string(s.concurrency); });
  row("completed", [](const auto& s) { return std::to_string(s.completed); });
  row("failed", [](const auto& s) { return std::to_string(s.failed); });
  row("duration (s)", [&](const auto& s) { return fixed(s.duration_s, 2); });
  row("requests/s", [&](const auto& s) { return fixed(s.request_throughput, 2); });
  row("output tokens/s", [&](const auto& s) { return fixed(s.output_throughput, 1); });
  row("input tokens", [](const auto& s) { return std::to_string(s.total_input_tokens); });
  row("output tokens", [](const auto& s) { return std::to_string(s.total_output_tokens); });
  if (std::any_of(rounds.begin(), rounds.end(), [](const Round& r) { return r.summary.cache_reported > 0; })) {
    row("cached prompt tokens", [](const auto& s) { return std::to_string(s.total_cached_tokens); });
    row("requests with a hit", [](const auto& s) {
      return std::to_string(s.cache_hit_requests) + "/" + std::to_string(s.cache_reported);
    });
  }
  if (o.slo_ttft_ms || o.slo_tpot_ms) row("goodput (req/s)", [&](const auto& s) { return fixed(*s.goodput, 2); });
  using Field = loadgen::LatencySummary loadgen::RunSummary::*;
  const std::pair<const char*, Field> metrics[] = {{"TTFT", &loadgen::RunSummary::ttft_ms},
                                                   {"TPOT", &loadgen::RunSummary::tpot_ms},
                                                   {"ITL", &loadgen::RunSummary::itl_ms},
                                                   {"E2E", &loadgen::RunSummary::e2e_ms}};
  for (const auto& [name, field] : metrics) {
    const std::pair<const char*, double loadgen::LatencySummary::*> stats[] = {
        {"mean", &loadgen::LatencySummary::mean},
        {"median", &loadgen::LatencySummary::median},
        {"p95", &loadgen::LatencySummary::p95},
        {"p99", &loadgen::LatencySummary::p99}};
    for (const auto& [stat, member] : stats) {
      const std::string label = std::string(name) + " " + stat + " (ms)";
      // Copies of the bindings: clang 14 (the sanitizer tree) cannot capture structured bindings.
      const Field f = field;
      const double loadgen::LatencySummary::*m = member;
      row(label.c_str(), [&](const auto& s) { return (s.*f).count ? fixed((s.*f).*m, 2) : "-"; });
    }
  }
  for (const auto& r : rounds)
    for (const auto& e : r.summary.errors)
      std::printf("error (c=%d, %lld x): %s\n", r.summary.concurrency, (long long)e.count, e.message.c_str());
}

std::string plot(const ServeBenchOptions& o, const std::vector<Round>& rounds) {
  loadgen::LineChart ttft{"TTFT distribution", "time to first token (ms)", "fraction of requests", {}};
  loadgen::LineChart e2e{"End-to-end latency distribution", "end-to-end latency (ms)", "fraction of requests", {}};
  loadgen::Curve throughput{"output tokens/s", {}, true}, ttft_p99{"TTFT p99", {}, true};
  for (const auto& r : rounds) {
    const std::string label = "c=" + std::to_string(r.summary.concurrency);
    ttft.curves.push_back({label, loadgen::cdf_points(r.ttft_ms), false});
    e2e.curves.push_back({label, loadgen::cdf_points(r.e2e_ms), false});
    const double c = r.summary.concurrency;
    throughput.points.push_back({c, r.summary.output_throughput});
    if (r.summary.ttft_ms.count) ttft_p99.points.push_back({c, r.summary.ttft_ms.p99});
  }
  std::vector<loadgen::LineChart> charts = {ttft, e2e};
  if (rounds.size() > 1) {
    charts.push_back({"Output throughput", "concurrency", "output tokens/s", {throughput}});
    charts.push_back({"TTFT p99", "concurrency", "TTFT p99 (ms)", {ttft_p99}});
  }
  return loadgen::render_svg(charts, "pagoda bench serve: " + describe(o));
}

int run(const ServeBenchOptions& o) {
  auto endpoint = loadgen::parse_base_url(o.base_url);
  if (!endpoint.ok()) return fail(endpoint.error().message);
  std::ofstream plot_file;
  if (!o.plot_path.empty()) {  // opened now, so a bad path fails before the benchmark rather than after it
    plot_file.open(o.plot_path);
    if (!plot_file) return fail("cannot open --plot file '" + o.plot_path + "' for writing");
  }
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (!o.extra_body.empty()) {
    extra = nlohmann::ordered_json::parse(o.extra_body, nullptr, /*allow_exceptions=*/false);
    if (!extra.is_object()) return fail("--extra-body must be a JSON object, e.g. '{\"top_k\": 1}'");
  }
  const loadgen::LoadGenerator generator({*endpoint, o.model, o.api_key, o.timeout_s, extra, o.prompt_text});
  Rng prompt_rng(o.seed), arrival_rng(o.seed ^ kArrivalStream);
  std::vector<std::vector<int32_t>> prefixes;  // [num_prefixes][shared_prefix_len]
  for (int64_t k = 0; k < o.num_prefixes; ++k)
    prefixes.push_back(loadgen::random_token_ids(prompt_rng, o.shared_prefix_len, o.vocab_size));

  // With one prefix the probe carries it (a warm-up, as before); with several it carries none, so that no prefix is
  // cached, or placed by a router, before the measured rounds.
  const std::vector<std::vector<int32_t>> probe_prefix =
      o.num_prefixes == 1 ? prefixes : std::vector<std::vector<int32_t>>{};
  const auto probe =
      generator.send_one(loadgen::make_prompts_from_prefixes(prompt_rng, probe_prefix, 1, o.input_len, o.vocab_size)[0],
                         1);
  if (!probe.ok()) return fail("the test request to " + o.base_url + " failed: " + *probe.error);

  const loadgen::Slo slo{o.slo_ttft_ms, o.slo_tpot_ms};
  std::vector<Round> rounds;
  int64_t completed = 0;
  for (int32_t c : o.concurrency) {
    // Fresh unique parts each round, so no round finds whole prompts of an earlier one in a prefix cache.
    const auto prompts =
        loadgen::make_prompts_from_prefixes(prompt_rng, prefixes, o.num_prompts, o.input_len, o.vocab_size);
    const auto arrivals = loadgen::arrival_times(arrival_rng, o.num_prompts, o.request_rate);
    const auto result = generator.run_round(c, prompts, arrivals, o.output_len, progress_bar(c));
    Round round{loadgen::summarize_run(c, result.records, result.duration_s, slo), {}, {}};
    for (const auto& r : result.records) {
      if (!r.ok()) continue;
      round.ttft_ms.push_back(r.ttft_s * 1e3);
      round.e2e_ms.push_back(r.e2e_s * 1e3);
    }
    completed += round.summary.completed;
    rounds.push_back(std::move(round));
  }

  if (o.format == "json") {
    print_json(o, rounds);
  } else {
    print_table(o, rounds);
  }
  if (plot_file.is_open()) {
    plot_file << plot(o, rounds);
    if (!plot_file.flush()) return fail("cannot write --plot file '" + o.plot_path + "'");
  }
  if (completed == 0) return fail("every request failed: " + rounds.front().summary.errors.front().message);
  return 0;
}

}  // namespace

void add_bench_serve_command(CLI::App& bench, Action& action) {
  auto opts = std::make_shared<ServeBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("serve", "Load-test an OpenAI-compatible server (streamed /v1/completions)");
  cmd->add_option("--base-url", opts->base_url, "Server URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is fine)")
      ->required();
  cmd->add_option("--model", opts->model, "Model name sent in every request")->required();
  cmd->add_option("--concurrency", opts->concurrency,
                  "Requests in flight; a comma list runs one round each (default 1)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--num-prompts", opts->num_prompts, "Requests per round (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--input-len", opts->input_len, "Unique random prompt tokens, after the shared prefix (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--output-len", opts->output_len, "Tokens generated per request (default 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--shared-prefix-len", opts->shared_prefix_len, "Prompt tokens shared by every prompt (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--num-prefixes", opts->num_prefixes,
                  "Distinct shared prefixes; each prompt starts with one drawn at random (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_flag("--prompt-text", opts->prompt_text,
                "Send prompts as text, one made-up word per id (for routers that refuse token-id prompts); "
                "input tokens are then the server's usage.prompt_tokens");
  cmd->add_option("--vocab-size", opts->vocab_size,
                  "Token ids are drawn from [10, V) (default 500, which fits the smallest test models)")
      ->check(CLI::Range(loadgen::kMinTokenId + 1, 1 << 24));
  cmd->add_option("--request-rate", opts->request_rate, "Poisson arrivals per second (default inf: all at once)")
      ->check(positive_rate());
  cmd->add_option("--seed", opts->seed, "Seed of prompts and arrivals (default 0)")->check(uint64_text());
  cmd->add_option("--slo-ttft-ms", opts->slo_ttft_ms, "Goodput objective: time to first token (ms)")
      ->check(finite_range(0.0, 1e9));
  cmd->add_option("--slo-tpot-ms", opts->slo_tpot_ms, "Goodput objective: time per output token (ms)")
      ->check(finite_range(0.0, 1e9));
  cmd->add_option("--api-key", opts->api_key, "Sent as 'Authorization: Bearer KEY'");
  cmd->add_option("--timeout", opts->timeout_s, "Longest wait to connect or for the next bytes, seconds (default 600)")
      ->check(finite_range(0.001, 86400.0));
  cmd->add_option("--extra-body", opts->extra_body,
                  "JSON object merged into every request body, e.g. '{\"logit_bias\": {\"3\": -100}}'");
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--plot", opts->plot_path, "Write latency CDFs (and scaling with concurrency) as an SVG file");
  cmd->callback([opts, &action] { action = [opts] { return run(*opts); }; });
}

}  // namespace pagoda::cli
