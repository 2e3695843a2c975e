#include "anchorbench/http_cell.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pagoda::anchorbench {
namespace {

using MonoClock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

// At most this much of a response body goes into an error message.
constexpr size_t kMaxQuoted = 300;
// Requests in flight while flushing the server's prefix cache.
constexpr int32_t kFlushConcurrency = 16;
// The longest prompt of a flush request.
constexpr int64_t kFlushPromptTokens = 2048;

std::string quote(const std::string& s) { return s.size() <= kMaxQuoted ? s : s.substr(0, kMaxQuoted) + "..."; }

// A short exchange with the server (models, metrics, the anchor endpoints): status and body, or why none came.
struct Reply {
  int status = 0;
  std::string body;
};

Result<Reply> exchange(const HttpTarget& t, const std::string& method, const std::string& path,
                       const std::string& key, const std::string& body = "") {
  httplib::Client client(t.client.endpoint.origin);
  const auto timeout = std::chrono::duration<double>(t.client.timeout_s);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  httplib::Headers headers;
  if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
  const std::string full = t.client.endpoint.path_prefix + path;
  httplib::Result res = method == "GET" ? client.Get(full, headers)
                                        : client.Post(full, headers, body, "application/json");
  if (!res)
    return make_error(method + " " + t.client.endpoint.origin + full + ": " + httplib::to_string(res.error()));
  return Reply{res->status, res->body};
}

Result<ojson> exchange_json(const HttpTarget& t, const std::string& method, const std::string& path,
                            const std::string& key, int expect, const std::string& body = "") {
  auto reply = exchange(t, method, path, key, body);
  if (!reply.ok()) return reply.error();
  if (reply->status != expect)
    return make_error(method + " " + path + ": HTTP " + std::to_string(reply->status) + ": " + quote(reply->body));
  ojson j = ojson::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(method + " " + path + ": the reply is not JSON: " + quote(reply->body));
  return j;
}

// pagoda's Prometheus text: the value of the first sample of `name` (any labels), or of a label inside the
// cache_config_info sample.
struct PagodaMetrics {
  double prefix_hits = 0;
  double preemptions = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 0;
};

double sample_value(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    const size_t space = line.rfind(' ');
    try {
      return std::stod(line.substr(space + 1));
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

int64_t label_value(const std::string& text, const std::string& label) {
  const size_t at = text.find(label + "=\"");
  if (at == std::string::npos) return 0;
  try {
    return std::stoll(text.substr(at + label.size() + 2));
  } catch (const std::exception&) {
    return 0;
  }
}

Result<PagodaMetrics> read_metrics(const HttpTarget& t) {
  auto reply = exchange(t, "GET", "/metrics", t.client.api_key);
  if (!reply.ok()) return reply.error();
  if (reply->status != 200) return make_error("GET /metrics: HTTP " + std::to_string(reply->status));
  PagodaMetrics m;
  m.prefix_hits = sample_value(reply->body, "pagoda:prefix_cache_hits_total");
  m.preemptions = sample_value(reply->body, "pagoda:num_preemptions_total");
  m.num_blocks = label_value(reply->body, "num_gpu_blocks");
  m.block_size = label_value(reply->body, "block_size");
  return m;
}

double ms(double s) { return s * 1e3; }

// The cell's requests, built like the in-process cell's.
class HttpCellRunner {
 public:
  HttpCellRunner(const BenchSetup& setup, const HttpTarget& target, const CellSpec& spec)
      : setup_(setup), target_(target), spec_(spec), m_(*setup.model), load_(target.client) {
    static std::atomic<int64_t> cells{0};
    cell_id_ = ++cells;
    // FNV-1a of "run/cell": the own tokens of this cell, unlike any other cell's of this or an earlier run against
    // the same server, whose prefix cache (or llama-server's slots) would otherwise serve them.
    own_seed_ = 0xcbf29ce484222325ull;
    for (char ch : target_.run_id + "/" + std::to_string(cell_id_)) own_seed_ = (own_seed_ ^ uint8_t(ch)) * 0x100000001b3ull;
    own_seed_ ^= setup_.seed;
  }

  Status prepare() {
    const BenchMode mode = spec_.mode;
    if (mode == BenchMode::kNone) return {};
    text_ = bench_anchor_text(m_, spec_.anchor_tokens, setup_.seed);
    text_tokens_ = m_.tokenizer().encode(text_, /*add_special=*/true, false);
    if (mode != BenchMode::kAnchor) return {};
    if (!setup_.signer) return make_error("anchor mode needs a signing key");
    // A lineage of its own per cell: re-registering a version of an existing lineage would be a rollback.
    auto s = setup_.signer->sign_and_verify(text_, target_.run_id + "/A" + std::to_string(spec_.anchor_tokens) +
                                                       "/T" + std::to_string(spec_.context_tokens) + "/C" +
                                                       std::to_string(spec_.concurrency));
    if (!s.ok()) return s.error();
    anchor_ = std::move(*s);
    const auto t0 = MonoClock::now();
    auto reg = exchange_json(target_, "POST", "/v1/anchors", target_.admin_api_key, 201, anchor_.envelope_json);
    if (!reg.ok()) return make_error("registering the anchor: " + reg.error().message);
    verify_ms_ = std::chrono::duration<double, std::milli>(MonoClock::now() - t0).count();
    auto act = exchange_json(target_, "POST", "/v1/anchors/" + anchor_.digest + "/activate", target_.admin_api_key, 200);
    if (!act.ok()) return make_error("activating the anchor: " + act.error().message);
    activated_ = true;
    prefill_ms_ = act->value("prefill_ms", 0.0);
    blocks_ = act->value("blocks", int64_t{0});
    return {};
  }

  void release() {
    if (activated_)
      (void)exchange(target_, "POST", "/v1/anchors/" + anchor_.digest + "/deactivate", target_.admin_api_key);
    activated_ = false;
  }

  struct Wave {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<ojson> bodies;
    std::vector<double> retrieval_ms;
    int64_t retrieval_hits = 0;
  };

  ojson byte_token_ban() const {
    ojson bias = ojson::array();
    const Vocab& v = m_.tokenizer().vocab();
    for (int32_t id = 0; id < v.size(); ++id)
      if (v.has_attr(id, TokenAttr::kByte)) bias.push_back(ojson::array({id, false}));
    return bias;
  }

  Wave make_wave(int64_t first, int32_t count) {
    Wave w;
    for (int32_t c = 0; c < count; ++c) {
      const int64_t index = first + c;
      std::vector<int32_t> prompt;
      ojson body = ojson::object();
      switch (spec_.mode) {
        case BenchMode::kNone:
          prompt = bench_bos_tokens(m_);
          break;
        case BenchMode::kText:
          prompt = text_tokens_;
          body["cache_salt"] = target_.run_id + "/" + std::to_string(cell_id_) + "/" + std::to_string(index);
          break;
        case BenchMode::kTextCached:
        case BenchMode::kTextCachedEvicted:
        case BenchMode::kAnchorLayers:  // refused before
          prompt = text_tokens_;
          break;
        case BenchMode::kPeer:
          prompt = text_tokens_;
          body["cache_prompt"] = true;
          // llama-server ends a stream with an error when the text stops inside a UTF-8 sequence ("does not match
          // the expected Content-only format"), which random weights do now and then through byte tokens: the
          // peer may not sample them. A bias on 256 tokens costs its sampler next to nothing.
          body["logit_bias"] = byte_token_ban();
          break;
        case BenchMode::kAnchor:
          body["anchor"] = anchor_.digest;
          break;
        case BenchMode::kRag: {
          const auto start = MonoClock::now();
          const SnippetStore::Hit hit = setup_.store->nearest(rag_query_for(text_));
          const std::string& snippet = setup_.store->text(hit.index);
          prompt = m_.tokenizer().encode(snippet, /*add_special=*/true, false);
          w.retrieval_ms.push_back(std::chrono::duration<double, std::milli>(MonoClock::now() - start).count());
          if (snippet == text_) ++w.retrieval_hits;
          break;
        }
      }
      const auto own = bench_own_tokens(m_, own_seed_, index, spec_.context_tokens);
      prompt.insert(prompt.end(), own.begin(), own.end());
      w.prompts.push_back(std::move(prompt));
      w.bodies.push_back(std::move(body));
    }
    return w;
  }

  // All at once (a wave), or at most `concurrency` in flight.
  Result<loadgen::RoundResult> send(const Wave& w, int64_t max_tokens, int32_t concurrency = 0) {
    const std::vector<double> arrivals(w.prompts.size(), 0.0);
    const int32_t c = concurrency > 0 ? concurrency : static_cast<int32_t>(w.prompts.size());
    loadgen::RoundResult round = load_.run_round(c, w.prompts, arrivals, max_tokens, {}, &w.bodies);
    for (const auto& r : round.records)
      if (!r.ok()) return make_error("a benchmark request failed: " + *r.error);
    return round;
  }

  // Unrelated requests of one token whose prompts cover the server's whole pool, so that its LRU evicts every
  // cached block from before.
  Status flush(const PagodaMetrics& pool) {
    if (pool.num_blocks <= 0 || pool.block_size <= 0)
      return make_error("text-cached-evicted: /metrics gave no pool size (num_gpu_blocks, block_size)");
    const int64_t capacity = pool.num_blocks * pool.block_size;
    // Prompts of at most kFlushPromptTokens (longer ones add attention work, not coverage), sent 16 at a time.
    const int64_t len = std::max<int64_t>(
        2, std::min<int64_t>({m_.hparams().n_ctx_train - 2, kFlushPromptTokens,
                              std::max<int64_t>(capacity / 2, pool.block_size)}));
    Wave w;
    for (int64_t done = 0; done < capacity + spec_.anchor_tokens + pool.block_size; done += len) {
      std::vector<int32_t> prompt = bench_bos_tokens(m_);
      const auto own = bench_own_tokens(m_, own_seed_ ^ 0xf1f1f1f1ull, flush_counter_++, len - 1);
      prompt.insert(prompt.end(), own.begin(), own.end());
      w.prompts.push_back(std::move(prompt));
      w.bodies.push_back(ojson::object());
    }
    auto round = send(w, 1, kFlushConcurrency);
    if (!round.ok()) return make_error("a flush request failed: " + round.error().message);
    return {};
  }

  double verify_ms() const { return verify_ms_; }
  double prefill_ms() const { return prefill_ms_; }
  int64_t blocks() const { return blocks_; }
  int64_t text_tokens() const { return static_cast<int64_t>(text_tokens_.size()); }

 private:
  const BenchSetup& setup_;
  const HttpTarget& target_;
  const CellSpec& spec_;
  const Model& m_;
  loadgen::LoadGenerator load_;
  std::string text_;
  std::vector<int32_t> text_tokens_;
  SignedAnchor anchor_;
  bool activated_ = false;
  double verify_ms_ = 0, prefill_ms_ = 0;
  int64_t blocks_ = 0;
  int64_t flush_counter_ = 0;
  int64_t cell_id_ = 0;    // salts differ between the cells of one run too
  uint64_t own_seed_ = 0;  // the own tokens' seed: unique to the run and the cell
};

}  // namespace

Status resolve_served_model(HttpTarget& target) {
  auto models = exchange_json(target, "GET", "/v1/models", target.client.api_key, 200);
  if (!models.ok()) return make_error("the server at " + target.client.endpoint.origin + ": " + models.error().message);
  const auto data = models->find("data");
  if (data == models->end() || !data->is_array() || data->empty() || !(*data)[0].is_object() ||
      !(*data)[0].contains("id") || !(*data)[0]["id"].is_string())
    return make_error("GET /v1/models at " + target.client.endpoint.origin + " lists no model id");
  target.client.model = (*data)[0]["id"].get<std::string>();
  return {};
}

Result<CellResult> run_http_cell(const BenchSetup& setup, const HttpTarget& target, const CellSpec& spec,
                                 const ProgressFn& progress) {
  const BenchMode mode = spec.mode;
  const bool pagoda = target.kind == HttpTarget::Kind::kPagoda;
  if (spec.gen_tokens < 1 || spec.concurrency < 1 || spec.waves < 1 || spec.context_tokens < 1)
    return make_error("a cell needs gen >= 1, concurrency >= 1, waves >= 1 and context >= 1");
  if (mode != BenchMode::kNone && spec.anchor_tokens < 2)
    return make_error(std::string("mode ") + bench_mode_name(mode) + " needs an anchor of at least 2 tokens");
  if (mode == BenchMode::kAnchorLayers)
    return make_error("anchor-layers runs in-process only: the HTTP API has no per-anchor layer mask");
  if (spec.cadence != AnchorRecheckCadence::kSession)
    return make_error("the verification-cadence ablation runs in-process only (an engine option for benchmarking)");
  if (pagoda == (mode == BenchMode::kPeer))
    return make_error(pagoda ? "the peer mode runs against llama-server (--peer-url)"
                             : std::string("llama-server runs the peer mode only, not ") + bench_mode_name(mode));
  if (mode == BenchMode::kRag && !setup.store) return make_error("rag needs a snippet store");

  HttpCellRunner runner(setup, target, spec);
  if (Status st = runner.prepare(); !st.ok()) {
    runner.release();
    return st.error();
  }
  struct Releaser {
    HttpCellRunner& r;
    ~Releaser() { r.release(); }
  } releaser{runner};

  // Warm-up: one wave of C requests (primes the prefix cache, and every llama-server slot, with the text).
  {
    auto warm = runner.send(runner.make_wave(-1 - spec.concurrency, spec.concurrency), spec.gen_tokens);
    if (!warm.ok()) return warm.error();
  }
  PagodaMetrics before;
  if (pagoda) {
    auto m = read_metrics(target);
    if (!m.ok()) return m.error();
    before = *m;
  }
  std::vector<double> ttft, itl, e2e, retrieval;
  int64_t tokens = 0, decode_tokens = 0, hits = 0;
  double seconds = 0, decode_seconds = 0;
  double flushed_hits = 0;  // prefix hits of the flush requests, not the cell's
  for (int32_t w = 0; w < spec.waves; ++w) {
    if (progress)
      progress(std::string(bench_mode_name(mode)) + " (http) A=" + std::to_string(runner.text_tokens()) + " T=" +
               std::to_string(spec.context_tokens) + " C=" + std::to_string(spec.concurrency) + " wave " +
               std::to_string(w + 1) + "/" + std::to_string(spec.waves));
    if (mode == BenchMode::kTextCachedEvicted) {
      auto m0 = read_metrics(target);
      if (!m0.ok()) return m0.error();
      if (Status st = runner.flush(*m0); !st.ok()) return st.error();
      auto m1 = read_metrics(target);
      if (!m1.ok()) return m1.error();
      flushed_hits += m1->prefix_hits - m0->prefix_hits;
    }
    const auto wave = runner.make_wave(static_cast<int64_t>(w) * spec.concurrency, spec.concurrency);
    auto round = runner.send(wave, spec.gen_tokens);
    if (!round.ok()) return round.error();
    retrieval.insert(retrieval.end(), wave.retrieval_ms.begin(), wave.retrieval_ms.end());
    hits += wave.retrieval_hits;
    // Token arrival times from the round's start: sent + TTFT, then the gaps.
    double last_first = 0, end = 0;
    for (const auto& r : round->records) {
      ttft.push_back(ms(r.ttft_s));
      e2e.push_back(ms(r.e2e_s));
      for (double gap : r.itl_s) itl.push_back(ms(gap));
      tokens += r.output_tokens;
      last_first = std::max(last_first, r.sent_s + r.ttft_s);
      end = std::max(end, r.sent_s + r.e2e_s);
    }
    for (const auto& r : round->records) {
      double t = r.sent_s + r.ttft_s;
      decode_tokens += t > last_first ? 1 : 0;
      for (double gap : r.itl_s) decode_tokens += (t += gap) > last_first ? 1 : 0;
    }
    seconds += round->duration_s;
    decode_seconds += std::max(0.0, end - last_first);
  }

  CellResult r;
  r.spec = spec;
  r.transport = "http";
  r.anchor_tokens = static_cast<int32_t>(mode == BenchMode::kNone ? 0 : runner.text_tokens());
  r.requests = static_cast<int64_t>(spec.waves) * spec.concurrency;
  r.ttft_ms = loadgen::summarize(ttft);
  r.itl_ms = loadgen::summarize(itl);
  r.e2e_ms = loadgen::summarize(e2e);
  r.retrieval_ms = loadgen::summarize(retrieval);
  r.retrieval_hit_rate = retrieval.empty() ? 0.0 : static_cast<double>(hits) / retrieval.size();
  r.output_tok_s = seconds > 0 ? tokens / seconds : 0;
  r.decode_tok_s = decode_seconds > 0 ? decode_tokens / decode_seconds : 0;
  if (pagoda) {
    auto after = read_metrics(target);
    if (!after.ok()) return after.error();
    r.prefix_hit_tokens = static_cast<int64_t>(std::llround(after->prefix_hits - before.prefix_hits - flushed_hits));
    r.preemptions = static_cast<int64_t>(std::llround(after->preemptions - before.preemptions));
  }
  if (mode == BenchMode::kAnchor) {
    r.anchor_verify_ms = runner.verify_ms();  // the registration round trip: HTTP + the server's verification
    r.anchor_prefill_ms = runner.prefill_ms();
  }
  return r;
}

}  // namespace pagoda::anchorbench
