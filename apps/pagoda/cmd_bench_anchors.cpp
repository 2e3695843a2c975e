// pagoda bench anchors MODEL [--modes ...] [--anchor-lengths ...] [--contexts ...] [--concurrency ...] [--cadence ...]
//                            [--base-url URL --admin-api-key KEY --anchor-key NAME.key] [--peer-url URL]
//                            [--functional] [--quick] [--format json] [--plot DIR]
// The anchor benchmark: serving cells (TTFT, ITL, end-to-end latency, tok/s, KV bytes per request) for every mode x
// anchor length x context x concurrency x KV dtype, on an in-process engine or, with --base-url, through a running
// `pagoda serve`; the peer mode through llama-server (--peer-url); the pool's capacity, the verification-cadence
// ablation and the functional metrics (in-process: they measure the engine). The measurements are in
// src/anchorbench/; this file runs the grid, prints it, plots it and checks the invariants. See
// docs/anchor-benchmark.md.
#include "cmd_bench_anchors.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "anchorbench/anchor_bench.h"
#include "anchorbench/anchor_functional.h"
#include "anchorbench/bench_texts.h"
#include "anchorbench/http_cell.h"
#include "anchor_cli_util.h"
#include "kernels/cpu/matmul.h"
#include "kv/kv_dtype.h"
#include "loadgen/svg_plot.h"
#include "model/model.h"

namespace pagoda::cli {
namespace {

using namespace anchorbench;
using loadgen::LatencySummary;

struct AnchorBenchOptions {
  std::string model_path;
  std::vector<std::string> modes = {"none", "text", "text-cached", "anchor", "anchor-layers", "rag"};
  std::vector<int32_t> anchor_lengths = {8, 32, 128, 512};
  std::vector<int64_t> contexts = {512, 4096};
  std::vector<std::string> concurrency = {"1", "4", "16"};
  std::vector<std::string> kv_dtypes = {"f16"};
  std::vector<std::string> cadences;  // empty: no ablation
  std::vector<int32_t> cadence_lengths = {8, 128, 512};
  std::vector<int32_t> cadence_concurrency = {1, 16};
  std::string anchor_layers = "0-3";
  int64_t gen = 64;
  int32_t waves = 3;
  // Poisson arrivals (run only when rates are given): rounds x rates x modes, interleaved.
  std::vector<double> request_rates;
  int32_t arrival_requests = 32;
  double unrelated_share = 0;  // eviction traffic among the arrivals
  int32_t rounds = 3;
  double slo_ttft_ms = 1000;
  double slo_itl_ms = 200;
  int64_t capacity_blocks = 1024;
  int64_t capacity_context = 512;
  bool functional = false;
  int32_t facts = 20;
  int32_t revocations = 100;
  int32_t drift_positions = 64;
  int32_t snippets = 1000;
  bool quick = false;
  bool check = false;
  bool skip_cells = false;
  int threads = 2;
  std::string kv_cache_mem = "1GiB";
  int32_t block_size = 16;
  uint64_t seed = 1;
  std::string format = "text";
  std::string plot_dir;
  // Through HTTP.
  std::string base_url;       // pagoda serve: the serving cells
  std::string peer_url;       // llama-server: the peer mode
  std::string api_key;        // both servers' request key
  std::string admin_api_key;  // pagoda serve's anchor endpoints
  std::string anchor_key;     // NAME.key that the server's --anchor-trust-root names (anchor role)
  double timeout_s = 600;
  bool modes_given = false;
};


nlohmann::ordered_json summary_json(const LatencySummary& s) {
  return {{"mean", s.mean}, {"p50", s.median}, {"p95", s.p95}, {"p99", s.p99}};
}

nlohmann::ordered_json cell_json(const CellResult& r, const std::string& model, const char* kind) {
  nlohmann::ordered_json j = {{"kind", kind},
                              {"model", model},
                              {"transport", r.transport},
                              {"isa", matmul_isa_name()},
                              {"mode", bench_mode_name(r.spec.mode)},
                              {"anchor_tokens", r.anchor_tokens},
                              {"context_tokens", r.spec.context_tokens},
                              {"concurrency", r.spec.concurrency},
                              {"gen_tokens", r.spec.gen_tokens},
                              {"kv_cache_dtype", r.kv_dtype},
                              {"cadence", anchor_recheck_cadence_name(r.spec.cadence)},
                              {"requests", r.requests},
                              {"ttft_ms", summary_json(r.ttft_ms)},
                              {"itl_ms", summary_json(r.itl_ms)},
                              {"e2e_ms", summary_json(r.e2e_ms)},
                              {"output_tok_s", r.output_tok_s},
                              {"decode_tok_s", r.decode_tok_s},
                              {"prefill_tokens_computed", r.prefill_tokens_computed},
                              {"prefix_hit_tokens", r.prefix_hit_tokens},
                              {"preemptions", r.preemptions},
                              {"kv_bytes_per_request", r.kv_bytes_per_request},
                              {"kv_bytes_per_request_formula", r.kv_bytes_per_request_formula},
                              {"anchor_kv_bytes_formula", r.anchor_kv_bytes_formula},
                              {"pinned_bytes", r.pinned_bytes}};
  if (r.transport == "http") {
    // The server's engine is not visible from here: its cache type, prefill count and block use are not measured.
    for (const char* k : {"kv_cache_dtype", "prefill_tokens_computed", "kv_bytes_per_request",
                          "kv_bytes_per_request_formula", "anchor_kv_bytes_formula", "pinned_bytes"})
      j.erase(k);
    j["server"] = r.spec.mode == BenchMode::kPeer ? "llama-server" : "pagoda";
    if (r.spec.mode == BenchMode::kPeer) {
      j.erase("prefix_hit_tokens");
      j.erase("preemptions");
    }
  }
  if (mode_has_anchor(r.spec.mode)) {
    j["anchor_verify_ms"] = r.anchor_verify_ms;
    j["anchor_prefill_ms"] = r.anchor_prefill_ms;
  }
  if (r.spec.mode == BenchMode::kRag) {
    j["retrieval_ms"] = summary_json(r.retrieval_ms);
    j["retrieval_hit_rate"] = r.retrieval_hit_rate;
  }
  if (r.spec.cadence != AnchorRecheckCadence::kSession || std::string(kind) == "cadence") {
    j["rechecks"] = r.rechecks;
    j["recheck_seconds"] = r.recheck_seconds;
  }
  return j;
}

class Report {
 public:
  explicit Report(const AnchorBenchOptions& o) : o_(o) {}

  void cell(const CellResult& r, const char* kind) {
    if (o_.format == "json") {
      std::printf("%s\n", json_line(cell_json(r, o_.model_path, kind)).c_str());
    } else {
      if (!header_printed_) {
        std::printf("%-8s %-20s %5s %6s %4s %-5s %8s %9s %9s %8s %8s %9s %10s %10s\n", "kind", "mode", "A", "T", "C",
                    "kv", "cadence", "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "out_tok/s", "kv/req_KiB",
                    "formula_KiB");
        header_printed_ = true;
      }
      std::printf("%-8s %-20s %5d %6lld %4d %-5s %8s %9.2f %9.2f %8.2f %8.2f %9.1f %10.1f %10.1f\n",
                  r.transport == "http" ? "http" : kind,
                  bench_mode_name(r.spec.mode), r.anchor_tokens, static_cast<long long>(r.spec.context_tokens),
                  r.spec.concurrency, r.kv_dtype.c_str(), anchor_recheck_cadence_name(r.spec.cadence),
                  r.ttft_ms.median, r.ttft_ms.p99, r.itl_ms.median, r.itl_ms.p99, r.output_tok_s,
                  r.kv_bytes_per_request / 1024, r.kv_bytes_per_request_formula / 1024);
    }
    std::fflush(stdout);
  }
  void object(const nlohmann::ordered_json& j) {
    if (o_.format == "json") {
      std::printf("%s\n", json_line(j).c_str());
    } else {
      std::printf("%s\n", j.dump().c_str());
    }
    std::fflush(stdout);
  }

 private:
  const AnchorBenchOptions& o_;
  bool header_printed_ = false;
};

// On a terminal, one line rewritten in place; otherwise (logs) a line per step.
void progress(const std::string& line) {
  static const bool tty = isatty(fileno(stderr));
  std::fprintf(stderr, tty ? "\r\033[K[bench anchors] %s" : "[bench anchors] %s\n", line.c_str());
  std::fflush(stderr);
}
void end_progress() {
  static const bool tty = isatty(fileno(stderr));
  if (tty) std::fprintf(stderr, "\r\033[K");
}

struct Checks {
  std::vector<std::string> failures;
  int passed = 0;
  void expect(bool ok, const std::string& what) {
    if (ok) ++passed;
    else failures.push_back(what);
  }
};

std::string cell_name(const CellSpec& s, int32_t anchor_tokens) {
  return std::string(bench_mode_name(s.mode)) + " A=" + std::to_string(anchor_tokens) + " T=" +
         std::to_string(s.context_tokens) + " C=" + std::to_string(s.concurrency) + " " +
         anchor_recheck_cadence_name(s.cadence);
}
std::string cell_name(const CellResult& r) { return cell_name(r.spec, r.anchor_tokens); }

void check_cell(Checks& checks, const CellResult& r, int32_t block_size) {
  const BenchMode m = r.spec.mode;
  if (r.transport == "http") {
    // What /metrics tells: a warm text of at least one block is found, a salted one never.
    if (m == BenchMode::kTextCached && r.anchor_tokens >= block_size)
      checks.expect(r.prefix_hit_tokens > 0, cell_name(r) + " (http): the warm prefix cache gave no hit");
    if (m == BenchMode::kText)
      checks.expect(r.prefix_hit_tokens == 0, cell_name(r) + " (http): salted text requests hit the prefix cache");
    return;
  }
  // KV bytes per request: the pool's blocks in use match the block count of the formula's tokens (anchor: the
  // request's own tokens only; text: anchor text + own; none: own), within one block of rounding per request.
  if ((m == BenchMode::kNone || m == BenchMode::kText || mode_has_anchor(m)) && r.spec.gen_tokens >= 4)
    checks.expect(std::abs(r.measured_blocks_per_request - static_cast<double>(r.expected_blocks_per_request)) <= 1.0,
                  cell_name(r) + ": " + std::to_string(r.measured_blocks_per_request) +
                      " blocks per request in use, the formula gives " + std::to_string(r.expected_blocks_per_request));
  // The cache holds whole blocks: a warm text of at least one block is found.
  if (m == BenchMode::kTextCached && r.anchor_tokens >= block_size)
    checks.expect(r.prefix_hit_tokens > 0, cell_name(r) + ": the warm prefix cache gave no hit");
  if (r.spec.cadence == AnchorRecheckCadence::kSession)
    checks.expect(r.rechecks == 0, cell_name(r) + ": re-checks ran at cadence session");
  if (r.spec.cadence == AnchorRecheckCadence::kToken)
    checks.expect(r.rechecks >= r.requests * r.spec.gen_tokens,
                  cell_name(r) + ": " + std::to_string(r.rechecks) + " re-checks, fewer than the generated tokens");
}

std::vector<loadgen::PlotPoint> points_of(const std::vector<std::pair<double, double>>& xy) {
  std::vector<loadgen::PlotPoint> out;
  for (auto [x, y] : xy) out.push_back({x, y});
  std::sort(out.begin(), out.end(), [](auto a, auto b) { return a.x < b.x; });
  return out;
}

Status write_plots(const AnchorBenchOptions& o, const std::vector<CellResult>& cells,
                   const std::vector<CapacityResult>& capacity, const std::vector<CellResult>& cadence) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(o.plot_dir, ec);
  if (ec) return make_error("--plot: cannot create " + o.plot_dir + ": " + ec.message());
  auto save = [&](const std::string& name, const std::vector<loadgen::LineChart>& charts, const std::string& head) {
    std::ofstream(fs::path(o.plot_dir) / name) << loadgen::render_svg(charts, head, 2);
  };
  const std::string heading = "pagoda bench anchors\n" + o.model_path + ", isa " + matmul_isa_name();
  // TTFT p99 and ITL p99 against A, per mode, per context, at the smallest and the largest concurrency.
  std::set<int64_t> contexts;
  std::set<int32_t> concs;
  std::set<std::string> dtypes;
  for (const auto& c : cells) {
    contexts.insert(c.spec.context_tokens);
    concs.insert(c.spec.concurrency);
    dtypes.insert(c.kv_dtype);
  }
  std::vector<loadgen::LineChart> latency, throughput;
  for (int64_t T : contexts)
    for (int32_t C : {concs.empty() ? 1 : *concs.begin(), concs.empty() ? 1 : *concs.rbegin()})
      for (const char* metric : {"TTFT p99", "ITL p99"}) {
        loadgen::LineChart chart{std::string(metric) + ", T=" + std::to_string(T) + ", C=" + std::to_string(C),
                                 "anchor tokens A", std::string(metric) + " (ms)", {}};
        std::map<std::string, std::vector<std::pair<double, double>>> by_mode;
        for (const auto& c : cells)
          if (c.spec.context_tokens == T && c.spec.concurrency == C && c.kv_dtype == *dtypes.begin()) {
            const double y = std::string(metric) == "TTFT p99" ? c.ttft_ms.p99 : c.itl_ms.p99;
            by_mode[bench_mode_name(c.spec.mode)].push_back({static_cast<double>(c.anchor_tokens), y});
          }
        for (auto& [mode, xy] : by_mode) chart.curves.push_back({mode, points_of(xy), true});
        latency.push_back(std::move(chart));
        if (concs.size() == 1) break;
      }
  if (!cells.empty()) save("latency_vs_anchor_length.svg", latency, heading);
  int32_t max_a = 0;
  for (const auto& c : cells) max_a = std::max(max_a, c.anchor_tokens);
  for (int64_t T : contexts) {
    loadgen::LineChart chart{"output tok/s, T=" + std::to_string(T) + ", largest A", "concurrency", "tok/s", {}};
    std::map<std::string, std::vector<std::pair<double, double>>> by_mode;
    for (const auto& c : cells)
      if (c.spec.context_tokens == T && (c.anchor_tokens == max_a || c.spec.mode == BenchMode::kNone) &&
          c.kv_dtype == *dtypes.begin())
        by_mode[bench_mode_name(c.spec.mode)].push_back({static_cast<double>(c.spec.concurrency), c.output_tok_s});
    for (auto& [mode, xy] : by_mode) chart.curves.push_back({mode, points_of(xy), true});
    throughput.push_back(std::move(chart));
  }
  if (!cells.empty()) save("throughput_vs_concurrency.svg", throughput, heading);
  if (!capacity.empty()) {
    loadgen::LineChart chart{"sequences running at once, pool of " + std::to_string(capacity.front().num_blocks) +
                                 " blocks",
                             "anchor tokens A", "peak running sequences", {}};
    std::map<std::string, std::vector<std::pair<double, double>>> by_mode;
    for (const auto& c : capacity)
      by_mode[bench_mode_name(c.mode)].push_back({static_cast<double>(c.anchor_tokens), double(c.peak_running)});
    for (auto& [mode, xy] : by_mode) chart.curves.push_back({mode, points_of(xy), true});
    save("capacity_vs_anchor_length.svg", {chart}, heading);
  }
  if (!cadence.empty()) {
    std::vector<loadgen::LineChart> charts;
    std::set<int32_t> cc;
    for (const auto& c : cadence) cc.insert(c.spec.concurrency);
    for (int32_t C : cc) {
      loadgen::LineChart chart{"decode slowdown against session, C=" + std::to_string(C), "anchor tokens A",
                               "session tok/s / cadence tok/s", {}};
      std::map<std::string, std::vector<std::pair<double, double>>> by_cadence;
      for (const auto& c : cadence) {
        if (c.spec.concurrency != C) continue;
        for (const auto& s : cadence)
          if (s.spec.concurrency == C && s.anchor_tokens == c.anchor_tokens &&
              s.spec.cadence == AnchorRecheckCadence::kSession && c.decode_tok_s > 0)
            by_cadence[anchor_recheck_cadence_name(c.spec.cadence)].push_back(
                {static_cast<double>(c.anchor_tokens), s.decode_tok_s / c.decode_tok_s});
      }
      for (auto& [name, xy] : by_cadence) chart.curves.push_back({name, points_of(xy), true});
      charts.push_back(std::move(chart));
    }
    save("cadence_slowdown.svg", charts, heading);
  }
  return {};
}

// The rag mode's store for anchor length A: the anchor's text among the snippets (it replaces the first one);
// nullptr for the other modes.
std::unique_ptr<SnippetStore> rag_store_for(BenchMode mode, const Model& m, int32_t A, const AnchorBenchOptions& o) {
  if (mode != BenchMode::kRag) return nullptr;
  auto texts = snippet_texts(o.snippets, o.seed);
  texts[0] = bench_anchor_text(m, A, o.seed);
  return std::make_unique<SnippetStore>(m, std::move(texts));
}

int run(AnchorBenchOptions o) {
  if (o.quick) {
    // CI-sized: every mode and every measurement, small.
    o.anchor_lengths = {8, 32};
    o.contexts = {48};
    o.concurrency = {"1", "4"};
    o.gen = 8;
    o.waves = 1;
    if (o.cadences.empty()) o.cadences = {"session", "segment", "block", "token", "step"};
    if (o.request_rates.empty()) o.request_rates = {40};
    o.arrival_requests = 6;
    o.rounds = 1;
    o.cadence_lengths = {32};
    o.cadence_concurrency = {1, 4};
    o.capacity_blocks = 96;
    o.capacity_context = 48;
    o.functional = true;
    o.facts = 4;
    o.revocations = 10;
    o.drift_positions = 16;
    o.snippets = 200;
    o.check = true;
  }
  auto model = Model::load(o.model_path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  auto modes = parse_bench_modes(o.modes);
  if (!modes.ok()) return fail("--modes: " + modes.error().message);
  std::vector<AnchorRecheckCadence> cadences;
  for (const auto& c : o.cadences) {
    auto parsed = parse_anchor_recheck_cadence(c);
    if (!parsed.ok()) return fail("--cadence: " + parsed.error().message);
    cadences.push_back(*parsed);
  }
  std::vector<int32_t> concs;
  bool saturation = false;
  for (const auto& c : o.concurrency) {
    if (c == "sat") {
      saturation = true;
      continue;
    }
    try {
      size_t used = 0;
      const int v = std::stoi(c, &used);
      if (used != c.size() || v < 1 || v > 1024) throw std::out_of_range(c);
      concs.push_back(v);
    } catch (const std::exception&) {
      return fail("--concurrency: '" + c + "' is not a number from 1 to 1024 or 'sat'");
    }
  }
  std::vector<KvDtype> dtypes;
  for (const auto& d : o.kv_dtypes) {
    auto parsed = parse_kv_dtype(d);
    if (!parsed.ok()) return fail("--kv-cache-dtype: " + parsed.error().message);
    if (auto st = check_kv_head_dim(*parsed, m.hparams().head_dim); !st.ok()) return fail(st.error().message);
    dtypes.push_back(*parsed);
  }
  auto layers = parse_layer_list(o.anchor_layers, m.hparams().n_layer, "--anchor-layers");
  if (!layers.ok()) return fail(layers.error().message);
  auto pool_bytes = parse_memory_size(o.kv_cache_mem);
  if (!pool_bytes.ok()) return fail("--kv-cache-mem: " + pool_bytes.error().message);
  // The contexts that will run must fit the model: every one for the cells, the first for the cadence ablation.
  auto longest = [](const std::vector<int32_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); };
  for (size_t i = 0; i < o.contexts.size(); ++i) {
    const bool cells = !o.skip_cells, cadence = i == 0 && !cadences.empty();
    const int64_t A = std::max(cells ? longest(o.anchor_lengths) : 0, cadence ? longest(o.cadence_lengths) : 0);
    if ((cells || cadence) && o.contexts[i] + o.gen + A + 1 > m.hparams().n_ctx_train)
      return fail("--contexts: " + std::to_string(o.contexts[i]) +
                  " plus the longest anchor and --gen exceeds the model's context of " +
                  std::to_string(m.hparams().n_ctx_train));
  }

  // Through HTTP: pagoda serve for the serving cells, llama-server for the peer mode.
  const bool over_http = !o.base_url.empty();
  if (!o.peer_url.empty() && std::find(modes->begin(), modes->end(), BenchMode::kPeer) == modes->end())
    modes->push_back(BenchMode::kPeer);
  const bool want_peer = std::find(modes->begin(), modes->end(), BenchMode::kPeer) != modes->end();
  if (want_peer && o.peer_url.empty()) return fail("--modes peer needs --peer-url (a llama-server)");
  if (over_http) {
    auto layers_mode = std::find(modes->begin(), modes->end(), BenchMode::kAnchorLayers);
    if (layers_mode != modes->end()) {
      if (o.modes_given)
        return fail("--base-url: anchor-layers runs in-process only (the HTTP API has no per-anchor layer mask)");
      std::fprintf(stderr, "pagoda: --base-url: anchor-layers runs in-process only; left out of the default modes\n");
      modes->erase(layers_mode);
    }
    if (dtypes.size() > 1)
      return fail("--base-url: the server's KV cache type is set when it starts (pagoda serve --kv-cache-dtype): "
                  "give one --kv-cache-dtype or none");
    if (std::find(modes->begin(), modes->end(), BenchMode::kAnchor) != modes->end() &&
        (o.anchor_key.empty() || o.admin_api_key.empty()))
      return fail("--base-url with the anchor mode needs --anchor-key (a key the server's --anchor-trust-root names "
                  "in its anchor role) and --admin-api-key (the server's)");
  }
  std::optional<Ed25519KeyPair> anchor_key;
  if (!o.anchor_key.empty()) {
    auto key = read_secret_key(o.anchor_key);
    if (!key.ok()) return fail("--anchor-key: " + key.error().message);
    anchor_key = *key;
  }
  const std::string run_id = [] {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%llx-%x",
                  static_cast<unsigned long long>(std::chrono::system_clock::now().time_since_epoch().count()),
                  static_cast<unsigned>(getpid()));
    return std::string(buf);
  }();
  auto make_target = [&](const std::string& url, HttpTarget::Kind kind) -> Result<HttpTarget> {
    auto endpoint = loadgen::parse_base_url(url);
    if (!endpoint.ok()) return endpoint.error();
    HttpTarget t;
    t.kind = kind;
    t.client.endpoint = *endpoint;
    t.client.api_key = o.api_key;
    t.client.timeout_s = o.timeout_s;
    t.admin_api_key = o.admin_api_key;
    t.run_id = "bench-" + run_id;
    if (Status st = resolve_served_model(t); !st.ok()) return st.error();
    return t;
  };
  std::optional<HttpTarget> base_target, peer_target;
  if (over_http) {
    auto t = make_target(o.base_url, HttpTarget::Kind::kPagoda);
    if (!t.ok()) return fail("--base-url: " + t.error().message);
    base_target = std::move(*t);
  }
  if (want_peer) {
    auto t = make_target(o.peer_url, HttpTarget::Kind::kLlamaServer);
    if (!t.ok()) return fail("--peer-url: " + t.error().message);
    peer_target = std::move(*t);
  }

  auto signer = BenchAnchorSigner::create(o.model_path, m, anchor_key ? &*anchor_key : nullptr);
  if (!signer.ok()) return fail(signer.error().message);
  BenchSetup setup;
  setup.model = &m;
  setup.engine.block_size = o.block_size;
  setup.engine.kv_cache_bytes = *pool_bytes;
  setup.engine.num_threads = o.threads;
  setup.engine.model_id = o.model_path;
  setup.engine.max_num_seqs = 1024;
  setup.engine.anchor_max_pinned_frac = 0.5;
  setup.visible_layers = *layers;
  setup.signer = &*signer;
  setup.seed = o.seed;
  Report report(o);
  Checks checks;
  auto prog = [](const std::string& line) { progress(line); };
  auto done_progress = [] { end_progress(); };
  // A serving cell where its mode runs: llama-server for the peer, pagoda serve with --base-url, else in-process.
  auto run_serving_cell = [&](const CellSpec& spec) -> Result<CellResult> {
    if (spec.mode == BenchMode::kPeer) return run_http_cell(setup, *peer_target, spec, prog);
    if (over_http) return run_http_cell(setup, *base_target, spec, prog);
    return run_cell(setup, spec, prog);
  };

  std::vector<CellResult> cells, cadence_cells;
  std::vector<CapacityResult> capacity;
  // 1. Serving cells.
  for (KvDtype dtype : o.skip_cells ? std::vector<KvDtype>{} : dtypes) {
    setup.engine.kv_cache_dtype = dtype;
    for (int64_t T : o.contexts)
      for (BenchMode mode : *modes) {
        // A server's cache type is its own: HTTP cells run once, not per --kv-cache-dtype.
        if ((over_http || mode == BenchMode::kPeer) && dtype != dtypes.front()) continue;
        std::vector<int32_t> lengths = mode == BenchMode::kNone ? std::vector<int32_t>{0} : o.anchor_lengths;
        for (int32_t A : lengths) {
          if (mode != BenchMode::kNone && A < 2) continue;  // A = 0 is the none mode
          std::unique_ptr<SnippetStore> store = rag_store_for(mode, m, A, o);
          setup.store = store.get();
          std::vector<std::pair<int32_t, double>> p99_by_c;  // (C, TTFT p99) of this row, for the saturation search
          for (int32_t C : concs) {
            CellSpec spec{mode, A, T, C, o.gen, o.waves, AnchorRecheckCadence::kSession};
            auto r = run_serving_cell(spec);
            done_progress();
            if (!r.ok()) return fail(cell_name(spec, spec.anchor_tokens) + ": " + r.error().message);
            if (o.check) check_cell(checks, *r, o.block_size);
            report.cell(*r, "cell");
            p99_by_c.push_back({C, r->ttft_ms.p99});
            cells.push_back(std::move(*r));
          }
          if (saturation) {
            // The smallest concurrency whose TTFT p99 passes 10x the concurrency-1 value: among the listed ones,
            // else doubling past the largest.
            auto c1 = std::find_if(p99_by_c.begin(), p99_by_c.end(), [](auto p) { return p.first == 1; });
            double ttft_p99_c1 = c1 == p99_by_c.end() ? 0.0 : c1->second;
            if (c1 == p99_by_c.end()) {
              auto r = run_serving_cell(CellSpec{mode, A, T, 1, o.gen, o.waves, AnchorRecheckCadence::kSession});
              done_progress();
              if (!r.ok()) return fail(r.error().message);
              ttft_p99_c1 = r->ttft_ms.p99;
            }
            std::sort(p99_by_c.begin(), p99_by_c.end());
            int32_t found = 0, below = 1;
            double at = 0;
            for (auto [C, p99] : p99_by_c) {
              if (p99 > 10 * ttft_p99_c1) {
                found = C;
                at = p99;
                break;
              }
              below = std::max(below, C);
            }
            for (int32_t C = std::max(2, below * 2); !found && C <= 1024; C *= 2) {
              auto r = run_serving_cell(CellSpec{mode, A, T, C, o.gen, 1, AnchorRecheckCadence::kSession});
              done_progress();
              if (!r.ok()) return fail(r.error().message);
              if (r->ttft_ms.p99 > 10 * ttft_p99_c1) {
                found = C;
                at = r->ttft_ms.p99;
              } else {
                below = C;
              }
            }
            // Saturation lies in (below, found]: the largest concurrency measured under the limit, and the first over.
            report.object({{"kind", "saturation"}, {"transport", over_http || mode == BenchMode::kPeer ? "http" : "in-process"},
                           {"mode", bench_mode_name(mode)}, {"anchor_tokens", A},
                           {"context_tokens", T}, {"kv_cache_dtype", kv_dtype_name(dtype)},
                           {"ttft_p99_c1_ms", ttft_p99_c1}, {"largest_under_10x", below},
                           {"saturation_concurrency", found}, {"ttft_p99_ms_there", at}});
          }
          setup.store = nullptr;
        }
      }
  }
  setup.engine.kv_cache_dtype = dtypes.front();
  // 2. Capacity on a fixed pool: text against the pinned anchor (and none), per anchor length.
  if (o.capacity_blocks > 0) {
    for (BenchMode mode : {BenchMode::kNone, BenchMode::kText, BenchMode::kAnchor}) {
      std::vector<int32_t> lengths = mode == BenchMode::kNone ? std::vector<int32_t>{0} : o.anchor_lengths;
      for (int32_t A : lengths) {
        if (mode != BenchMode::kNone && A < 2) continue;
        prog(std::string("capacity ") + bench_mode_name(mode) + " A=" + std::to_string(A));
        auto r = measure_capacity(setup, mode, A, o.capacity_context, o.gen, o.capacity_blocks);
        done_progress();
        if (!r.ok()) return fail(std::string("capacity: ") + r.error().message);
        report.object({{"kind", "capacity"}, {"model", o.model_path}, {"mode", bench_mode_name(mode)},
                       {"anchor_tokens", r->anchor_tokens}, {"context_tokens", r->context_tokens},
                       {"gen_tokens", r->gen_tokens}, {"kv_cache_dtype", kv_dtype_name(dtypes.front())},
                       {"pool_blocks", r->num_blocks}, {"pinned_blocks", r->pinned_blocks},
                       {"peak_running", r->peak_running}, {"predicted", r->predicted},
                       {"predicted_at_admission", r->predicted_at_admission},
                       {"preemptions", r->preemptions}});
        if (o.check)
          checks.expect(r->peak_running >= r->predicted && r->peak_running <= r->predicted_at_admission,
                        std::string("capacity ") + bench_mode_name(mode) + " A=" + std::to_string(A) + ": " +
                            std::to_string(r->peak_running) + " sequences ran at once, the block arithmetic predicts " +
                            std::to_string(r->predicted) + " at full length to " +
                            std::to_string(r->predicted_at_admission) + " at admission");
        capacity.push_back(*r);
      }
    }
  }
  // 2b. Open-loop load: Poisson arrivals at each rate, per mode, in interleaved rounds (round, rate, mode), with the
  // largest --anchor-lengths and the first --contexts. Goodput under the SLO per cell.
  if (!o.request_rates.empty() && !over_http) {
    const int32_t A = *std::max_element(o.anchor_lengths.begin(), o.anchor_lengths.end());
    for (int32_t round = 0; round < o.rounds; ++round)
      for (double rate : o.request_rates)
        for (BenchMode mode : *modes) {
          if (mode == BenchMode::kPeer || mode == BenchMode::kTextCachedEvicted) continue;
          std::unique_ptr<SnippetStore> store = rag_store_for(mode, m, A, o);
          setup.store = store.get();
          ArrivalSpec spec;
          spec.cell = CellSpec{mode, mode == BenchMode::kNone ? 0 : A, o.contexts.front(), 1, o.gen, 1,
                               AnchorRecheckCadence::kSession};
          spec.rate = rate;
          spec.requests = o.arrival_requests;
          spec.round = static_cast<uint64_t>(round);
          spec.slo_ttft_ms = o.slo_ttft_ms;
          spec.slo_itl_ms = o.slo_itl_ms;
          spec.unrelated_share = o.unrelated_share;
          prog(std::string("arrivals ") + bench_mode_name(mode) + " rate=" + std::to_string(rate) + " round " +
               std::to_string(round + 1) + "/" + std::to_string(o.rounds));
          auto r = run_arrival_cell(setup, spec);
          done_progress();
          setup.store = nullptr;
          if (!r.ok()) return fail(std::string("arrivals ") + bench_mode_name(mode) + ": " + r.error().message);
          report.object({{"kind", "arrivals"}, {"mode", bench_mode_name(mode)}, {"anchor_tokens", spec.cell.anchor_tokens},
                         {"context_tokens", spec.cell.context_tokens}, {"gen_tokens", spec.cell.gen_tokens},
                         {"request_rate", rate}, {"round", round}, {"requests", r->requests}, {"good", r->good},
                         {"slo_ttft_ms", o.slo_ttft_ms}, {"slo_itl_ms", o.slo_itl_ms},
                         {"goodput_req_s", r->goodput_req_s}, {"output_tok_s", r->output_tok_s},
                         {"seconds", r->seconds}, {"peak_running", r->peak_running},
                         {"ttft_p50_ms", r->ttft_ms.median}, {"ttft_p99_ms", r->ttft_ms.p99},
                         {"itl_p50_ms", r->itl_ms.median}, {"itl_p99_ms", r->itl_ms.p99},
                         {"e2e_p50_ms", r->e2e_ms.median}, {"unrelated_share", o.unrelated_share},
                         {"unrelated_requests", r->unrelated_requests},
                         {"unrelated_ttft_p50_ms", r->unrelated_ttft_ms.median},
                         {"unrelated_ttft_p99_ms", r->unrelated_ttft_ms.p99},
                         {"cached_prompt_tokens_mean", r->cached_prompt_tokens_mean},
                         {"text_fully_cached_share", r->text_fully_cached_share}, {"preemptions", r->preemptions},
                         {"kv_cache_mem", o.kv_cache_mem},
                         {"anchor_layers", mode == BenchMode::kAnchorLayers ? o.anchor_layers : std::string()}});
          if (o.check)
            checks.expect(r->requests == o.arrival_requests && r->tokens == int64_t{r->requests} * o.gen,
                          std::string("arrivals ") + bench_mode_name(mode) + ": " + std::to_string(r->tokens) +
                              " tokens from " + std::to_string(r->requests) + " requests");
        }
  } else if (!o.request_rates.empty()) {
    return fail("--request-rates runs in-process only (drop --base-url)");
  }
  // 3. The verification-cadence ablation.
  for (int32_t A : o.cadence_lengths)
    for (int32_t C : o.cadence_concurrency)
      for (AnchorRecheckCadence cadence : cadences) {
        CellSpec spec{BenchMode::kAnchor, A, o.contexts.front(), C, o.gen, o.waves, cadence};
        auto r = run_cell(setup, spec, prog);
        done_progress();
        if (!r.ok()) return fail(cell_name(spec, spec.anchor_tokens) + ": " + r.error().message);
        if (o.check) check_cell(checks, *r, o.block_size);
        report.cell(*r, "cadence");
        cadence_cells.push_back(std::move(*r));
      }
  // 4. Functional metrics.
  if (o.functional) {
    FunctionalOptions fo;
    fo.facts = o.facts;
    fo.revocations = o.revocations;
    fo.drift_positions = o.drift_positions;
    prog("functional: stable facts");
    auto facts = measure_facts(setup, fo);
    done_progress();
    if (!facts.ok()) return fail("facts: " + facts.error().message);
    report.object({{"kind", "facts"}, {"model", o.model_path}, {"facts", facts->facts}, {"probes", facts->probes},
                   {"mean_logprob_anchor", facts->mean_logprob_anchor}, {"mean_logprob_text", facts->mean_logprob_text},
                   {"mean_logprob_none", facts->mean_logprob_none}, {"top1_anchor", facts->top1_anchor},
                   {"top1_text", facts->top1_text}, {"top1_none", facts->top1_none},
                   {"gate0_bitwise", facts->gate0_bitwise}});
    if (o.check)
      checks.expect(facts->gate0_bitwise == facts->probes,
                    "facts: " + std::to_string(facts->probes - facts->gate0_bitwise) +
                        " probes whose logits with the anchor differ from the plain prefix (Gate 0)");
    prog("functional: attention mass");
    auto attention = measure_attention(setup, fo);
    done_progress();
    if (!attention.ok()) return fail("attention: " + attention.error().message);
    nlohmann::ordered_json buckets = nlohmann::ordered_json::array();
    for (size_t b = 0; b < attention->bucket_queries.size(); ++b) {
      std::vector<double> per_layer(attention->bucket_layer_mass.begin() + b * attention->n_layer,
                                    attention->bucket_layer_mass.begin() + (b + 1) * attention->n_layer);
      buckets.push_back({{"distance_from", int64_t{1} << b}, {"distance_to", (int64_t{2} << b) - 1},
                         {"queries", attention->bucket_queries[b]}, {"mass_per_layer", per_layer}});
    }
    report.object({{"kind", "attention"}, {"model", o.model_path}, {"n_layer", attention->n_layer},
                   {"n_head", attention->n_head}, {"by_distance", buckets},
                   {"generated_queries", attention->generated_queries},
                   {"generated_mass_layer_head", attention->generated_head_mass}});
    if (o.check) {
      bool in_range = !attention->bucket_queries.empty();
      for (double x : attention->bucket_layer_mass) in_range = in_range && x >= 0 && x <= 1.0 + 1e-6;
      checks.expect(in_range, "attention: masses outside [0, 1] or nothing measured");
    }
    prog("functional: drift");
    auto drift = measure_drift(setup, fo);
    done_progress();
    if (!drift.ok()) return fail("drift: " + drift.error().message);
    report.object({{"kind", "drift"}, {"model", o.model_path}, {"sequences", drift->sequences},
                   {"mean_kl", drift->mean_kl}, {"kl_by_position", drift->kl_by_position}});
    prog("functional: continuity");
    auto cont = measure_continuity(setup, fo);
    done_progress();
    if (!cont.ok()) return fail("continuity: " + cont.error().message);
    report.object({{"kind", "continuity"}, {"model", o.model_path}, {"compared", cont->compared},
                   {"identical_across_requests", cont->identical_across_requests},
                   {"identical_across_restart", cont->identical_across_restart}});
    if (o.check)
      checks.expect(cont->identical_across_requests == cont->compared && cont->identical_across_restart == cont->compared,
                    "continuity: an anchored request's logits changed across requests or a restart");
    prog("functional: revocation under load");
    auto rev = measure_revocation(setup, fo);
    done_progress();
    if (!rev.ok()) return fail("revocation: " + rev.error().message);
    report.object({{"kind", "revocation"}, {"model", o.model_path}, {"revocations", rev->revocations},
                   {"concurrency", rev->concurrency}, {"steps_after_arrival", summary_json(rev->steps_after_arrival)},
                   {"max_steps_after_arrival", rev->max_steps_after_arrival},
                   {"ms_arrival_to_last_attended_step_end", summary_json(rev->ms_to_last_attended)},
                   {"requests_ended_revoked", rev->requests_ended_revoked}});
    if (o.check) {
      checks.expect(rev->max_steps_after_arrival == 0,
                    "revocation: a step after the one running at arrival attended to the revoked anchor");
      checks.expect(rev->requests_ended_revoked == rev->revocations * rev->concurrency,
                    "revocation: " + std::to_string(rev->requests_ended_revoked) + " of " +
                        std::to_string(rev->revocations * rev->concurrency) + " requests ended anchor_revoked");
    }
  }
  if (!o.plot_dir.empty())
    if (Status st = write_plots(o, cells, capacity, cadence_cells); !st.ok()) return fail(st.error().message);
  if (o.check) {
    report.object({{"kind", "checks"}, {"passed", checks.passed}, {"failed", checks.failures.size()},
                   {"failures", checks.failures}});
    for (const auto& f : checks.failures) std::fprintf(stderr, "check failed: %s\n", f.c_str());
    if (!checks.failures.empty()) return 1;
  }
  return 0;
}

}  // namespace

void add_bench_anchors_command(CLI::App& bench, Action& action) {
  auto o = std::make_shared<AnchorBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("anchors", "What verified anchors cost and do (docs/anchor-benchmark.md)");
  cmd->add_option("model", o->model_path, "Model: a GGUF file or a Hugging Face folder")->required();
  cmd->footer(
      "Modes (what the anchor's text is to a request; docs/anchor-benchmark.md, section 2.1):\n"
      "  none                 no anchor: the request is BOS + its own T tokens\n"
      "  text                 A tokens of anchor text pasted before the request's tokens, prefix cache off\n"
      "  text-cached          the same with the prefix cache on, primed by an earlier request (warm)\n"
      "  text-cached-evicted  the same after unrelated traffic pushed the text out of the cache (closed waves;\n"
      "                       under Poisson arrivals, --unrelated-share mixes such traffic in with any mode)\n"
      "  anchor               a verified anchor pinned in the pool; the request names its digest\n"
      "  anchor-layers        the same, visible only to the layers of --anchor-layers\n"
      "  rag                  the text retrieved per request from a store of --snippets snippets, then pasted;\n"
      "                       queried with the anchor's first sentence (the requests hold no question), so it\n"
      "                       always hits: a cost mode. The question-driven rag is `pagoda bench anchor-memory`'s\n"
      "  peer                 llama-server (--peer-url) with the text as a cached prompt prefix (cache_prompt)\n"
      "Cadences (--cadence): session (verify once, pagoda's design), segment (per admission), block (every 16\n"
      "tokens per sequence), token (every token per sequence), step (once per engine step per anchor).\n"
      "Is the content used? See `pagoda bench anchor-memory`.");
  cmd->add_option("--modes", o->modes,
                  "Modes: none, text, text-cached (warm and evicted), text-cached-evicted, anchor, anchor-layers, rag, "
                  "peer (llama-server, --peer-url)")
      ->delimiter(',')
      ->each([o](const std::string&) { o->modes_given = true; });
  cmd->add_option("--anchor-lengths", o->anchor_lengths, "Anchor tokens A, BOS included (default 8,32,128,512)")
      ->delimiter(',')
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--contexts", o->contexts, "The requests' own prompt tokens T (default 512,4096)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--concurrency", o->concurrency,
                  "Requests per wave (default 1,4,16); 'sat' adds the saturation search (TTFT p99 > 10x C=1)")
      ->delimiter(',');
  cmd->add_option("--kv-cache-dtype", o->kv_dtypes, "KV cache element types (default f16)")->delimiter(',');
  cmd->add_option("--cadence", o->cadences,
                  "Verification-cadence ablation: session, segment, block, token, step (default: not run)")
      ->delimiter(',');
  cmd->add_option("--cadence-anchor-lengths", o->cadence_lengths, "A for the ablation (default 8,128,512)")
      ->delimiter(',')
      ->check(CLI::Range(2, 4096));
  cmd->add_option("--cadence-concurrency", o->cadence_concurrency, "C for the ablation (default 1,16)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--anchor-layers", o->anchor_layers, "anchor-layers mode: the layers that see the anchor (0-3)");
  cmd->add_option("-n,--gen", o->gen, "Generated tokens per request (default 64)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--request-rates", o->request_rates,
                  "Open-loop load: Poisson arrivals per second, each rate a cell per mode (default: not run)")
      ->delimiter(',')
      ->check(CLI::Range(1e-3, 1e6));
  cmd->add_option("--arrival-requests", o->arrival_requests, "Requests per arrivals cell (default 32)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--unrelated-share", o->unrelated_share,
                  "Eviction traffic: this share of the arrivals are unrelated requests (A + T tokens of their own) that "
                  "compete for the pool (--kv-cache-mem) with the mode's cached text (default 0)")
      ->check(CLI::Range(0.0, 0.95));
  cmd->add_option("--rounds", o->rounds, "Interleaved rounds of the arrivals cells (default 3)")->check(CLI::Range(1, 100));
  cmd->add_option("--slo-ttft-ms", o->slo_ttft_ms, "Goodput SLO: a request's TTFT bound (default 1000 ms)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--slo-itl-ms", o->slo_itl_ms, "Goodput SLO: bound on a request's own ITL p99 (default 200 ms)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--waves", o->waves, "Waves of C requests per cell, after one warm-up request (default 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--capacity-blocks", o->capacity_blocks,
                  "Pool (blocks) of the capacity measurement; 0 skips it (default 1024)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--capacity-context", o->capacity_context, "T of the capacity measurement (default 512)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_flag("--functional", o->functional,
                "Functional metrics: stable facts, attention mass, drift, continuity, revocation (for stories260K)");
  cmd->add_option("--facts", o->facts, "Facts for the functional metrics (default 20)")->check(CLI::Range(1, 1000));
  cmd->add_option("--revocations", o->revocations, "Revocations under load (default 100)")->check(CLI::Range(1, 100000));
  cmd->add_option("--drift-positions", o->drift_positions, "Generated positions of the drift measurement (64)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--snippets", o->snippets, "rag: snippets in the store (default 1000)")->check(CLI::Range(1, 1000000));
  cmd->add_flag("--quick", o->quick, "CI-sized run of everything, with the invariant checks (exit 1 if one fails)");
  cmd->add_flag("--skip-cells", o->skip_cells, "Skip the serving cells (run only capacity, cadence, functional)");
  cmd->add_flag("--check", o->check, "Check the invariants (KV bytes formula, Gate 0, continuity, revocation)");
  cmd->add_option("-t,--threads", o->threads, "Threads (default 2)")->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-cache-mem", o->kv_cache_mem, "KV pool of each serving cell (default 1GiB)");
  cmd->add_option("--block-size", o->block_size, "KV block size in tokens (default 16)")->check(CLI::Range(1, 4096));
  cmd->add_option("--seed", o->seed, "Seed of the requests and texts (default 1)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--plot", o->plot_dir, "Write SVG plots into this folder");
  cmd->add_option("--base-url", o->base_url,
                  "Run the serving cells through a running `pagoda serve` at this URL (HTTP costs included)");
  cmd->add_option("--peer-url", o->peer_url,
                  "llama-server at this URL for the peer mode: the anchor text as a cached prompt prefix (cache_prompt)");
  cmd->add_option("--api-key", o->api_key, "The servers' API key (sent as a Bearer token)");
  cmd->add_option("--admin-api-key", o->admin_api_key, "--base-url: pagoda serve's --admin-api-key (anchor endpoints)");
  cmd->add_option("--anchor-key", o->anchor_key,
                  "--base-url: NAME.key (pagoda anchor keygen) that signs the anchors; the server's trust root must "
                  "name it in its anchor role");
  cmd->add_option("--timeout", o->timeout_s, "HTTP: longest wait for a connection or the next bytes (default 600 s)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace pagoda::cli
