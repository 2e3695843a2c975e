#include "anchorbench/anchor_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "anchorbench/bench_texts.h"
#include "loadgen/workload.h"
#include "util/rng.h"

namespace pagoda::anchorbench {
namespace {

using MonoClock = std::chrono::steady_clock;

double ms_between(MonoClock::time_point a, MonoClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::vector<int32_t> own_tokens(const Model& m, uint64_t seed, int64_t request, int64_t n) {
  return bench_own_tokens(m, seed, request, n);
}
std::vector<int32_t> bos_tokens(const Model& m) { return bench_bos_tokens(m); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// What a cell's requests are built from.
struct Prepared {
  std::string text;                  // the anchor's text
  std::vector<int32_t> text_tokens;  // encoded like an anchor (BOS first)
  SignedAnchor signed_anchor;        // anchor modes
  AnchorActivation activation;
};

struct Wave {
  std::vector<double> ttft, itl, e2e, retrieval;
  int64_t tokens = 0;
  int64_t decode_tokens = 0;
  double seconds = 0;
  double decode_seconds = 0;
  int32_t peak_used_blocks = 0;
  int64_t retrieval_hits = 0;
};

class CellRunner {
 public:
  CellRunner(const BenchSetup& setup, const CellSpec& spec, Engine& engine, const Prepared& prep)
      : setup_(setup), spec_(spec), e_(engine), prep_(prep), m_(*setup.model) {}

  // Requests [first, first + count) as one wave.
  Result<Wave> run_wave(int64_t first, int32_t count) {
    Wave w;
    std::vector<GenerationRequest> requests;
    for (int32_t c = 0; c < count; ++c) {
      auto r = make_request(first + c, &w);
      if (!r.ok()) return r.error();
      requests.push_back(std::move(*r));
    }
    std::vector<std::shared_ptr<RequestStream>> streams;
    std::vector<std::vector<MonoClock::time_point>> times(count);
    const auto t0 = MonoClock::now();
    for (auto& r : requests) streams.push_back(e_.submit(std::move(r)));
    int32_t peak = 0;
    while (e_.step()) {
      const auto now = MonoClock::now();
      peak = std::max(peak, e_.stats().blocks.used_blocks);
      for (int32_t c = 0; c < count; ++c) {
        StreamEvent ev;
        while (streams[c]->try_next(&ev)) {
          if (ev.kind == StreamEvent::Kind::kToken) times[c].push_back(now);
          if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError)
            return make_error("a benchmark request failed: " + ev.error);
        }
      }
    }
    const auto t_end = MonoClock::now();
    MonoClock::time_point last_first = t0;
    for (int32_t c = 0; c < count; ++c) {
      if (times[c].empty()) return make_error("a benchmark request produced no token");
      w.ttft.push_back(ms_between(t0, times[c].front()));
      w.e2e.push_back(ms_between(t0, times[c].back()));
      for (size_t k = 1; k < times[c].size(); ++k) w.itl.push_back(ms_between(times[c][k - 1], times[c][k]));
      w.tokens += static_cast<int64_t>(times[c].size());
      last_first = std::max(last_first, times[c].front());
    }
    // Steady decode: the tokens that came after every request had its first one, over that time (no prefill runs
    // then, so this is the decode rate at concurrency C).
    for (int32_t c = 0; c < count; ++c)
      w.decode_tokens += std::count_if(times[c].begin(), times[c].end(), [&](auto t) { return t > last_first; });
    w.seconds = ms_between(t0, t_end) / 1e3;
    w.decode_seconds = ms_between(last_first, t_end) / 1e3;
    w.peak_used_blocks = peak;
    return w;
  }

  // Requests [first, first + arrivals.size()) sent at arrivals[i] seconds after the start (ascending; an open loop:
  // a request arrives whether or not the earlier ones are done), the engine stepped on this thread in between.
  // Each request's TTFT counts from its own arrival.
  // unrelated[i] != 0 makes arrival i an unrelated request (eviction traffic): counted apart from the mode's.
  Result<ArrivalResult> run_arrivals(int64_t first, const std::vector<double>& arrivals,
                                     const std::vector<uint8_t>& unrelated, double slo_ttft_ms, double slo_itl_ms) {
    const size_t n = arrivals.size();
    Wave w;
    std::vector<std::shared_ptr<RequestStream>> streams;
    std::vector<MonoClock::time_point> sent;
    std::vector<std::vector<MonoClock::time_point>> times(n);
    std::vector<int64_t> cached(n, -1);
    ArrivalResult out;
    const EngineStats before = e_.stats();
    const auto t0 = MonoClock::now();
    size_t next = 0;
    for (;;) {
      const double elapsed = ms_between(t0, MonoClock::now()) / 1e3;
      while (next < n && arrivals[next] <= elapsed) {
        auto r = unrelated[next] ? unrelated_request(first + static_cast<int64_t>(next))
                                 : make_request(first + static_cast<int64_t>(next), &w);
        if (!r.ok()) return r.error();
        sent.push_back(MonoClock::now());
        streams.push_back(e_.submit(std::move(*r)));
        ++next;
      }
      const bool busy = e_.step();
      const auto now = MonoClock::now();
      out.peak_running = std::max(out.peak_running, e_.stats().running);
      for (size_t i = 0; i < streams.size(); ++i) {
        StreamEvent ev;
        while (streams[i]->try_next(&ev)) {
          if (ev.kind == StreamEvent::Kind::kToken) {
            times[i].push_back(now);
            if (ev.cached_prompt_tokens >= 0 && cached[i] < 0) cached[i] = ev.cached_prompt_tokens;
          }
          if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError)
            return make_error("a benchmark request failed: " + ev.error);
        }
      }
      if (!busy) {
        if (next == n) break;
        const double wait = arrivals[next] - ms_between(t0, MonoClock::now()) / 1e3;
        if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      }
    }
    const auto t_end = MonoClock::now();
    std::vector<double> ttft, itl, e2e, unrelated_ttft;
    // The anchor's text in whole blocks: what a prefix cache can hold of it (a pinned anchor holds it all).
    const int64_t bs = e_.stats().block_size;
    const int64_t text = static_cast<int64_t>(prep_.text_tokens.size());
    const int64_t cacheable = spec_.mode == BenchMode::kNone ? 0 : text / bs * bs;
    double cached_sum = 0;
    int32_t fully = 0;
    for (size_t i = 0; i < n; ++i) {
      if (times[i].empty()) return make_error("a benchmark request produced no token");
      if (unrelated[i]) {
        unrelated_ttft.push_back(ms_between(sent[i], times[i].front()));
        ++out.unrelated_requests;
        continue;
      }
      const int64_t c = std::max<int64_t>(cached[i], 0);
      cached_sum += static_cast<double>(c);
      fully += cacheable > 0 && c >= cacheable;
      ttft.push_back(ms_between(sent[i], times[i].front()));
      e2e.push_back(ms_between(sent[i], times[i].back()));
      std::vector<double> own;
      for (size_t k = 1; k < times[i].size(); ++k) own.push_back(ms_between(times[i][k - 1], times[i][k]));
      itl.insert(itl.end(), own.begin(), own.end());
      const double own_itl_p99 = own.empty() ? 0.0 : loadgen::summarize(own).p99;
      out.good += ttft.back() <= slo_ttft_ms && own_itl_p99 <= slo_itl_ms;
      out.tokens += static_cast<int64_t>(times[i].size());
    }
    out.requests = static_cast<int32_t>(n) - out.unrelated_requests;
    out.cached_prompt_tokens_mean = out.requests > 0 ? cached_sum / out.requests : 0;
    out.text_fully_cached_share = out.requests > 0 ? static_cast<double>(fully) / out.requests : 0;
    out.unrelated_ttft_ms = loadgen::summarize(unrelated_ttft);
    out.preemptions = e_.stats().preemptions - before.preemptions;
    out.seconds = ms_between(t0, t_end) / 1e3;
    out.ttft_ms = loadgen::summarize(ttft);
    out.itl_ms = loadgen::summarize(itl);
    out.e2e_ms = loadgen::summarize(e2e);
    out.goodput_req_s = out.seconds > 0 ? out.good / out.seconds : 0;
    out.output_tok_s = out.seconds > 0 ? out.tokens / out.seconds : 0;
    return out;
  }

  // Unrelated requests whose blocks fill the whole pool, so that the LRU evicts every cached block from before.
  Status flush() {
    const int64_t bs = e_.stats().block_size;
    const int64_t capacity = static_cast<int64_t>(e_.stats().blocks.num_blocks) * bs;
    const int64_t len = std::min<int64_t>(spec_.anchor_tokens + spec_.context_tokens, capacity / 2);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int64_t done = 0, k = 0; done < capacity + spec_.anchor_tokens + bs; done += len, ++k) {
      GenerationRequest r;
      r.prompt = own_tokens(m_, setup_.seed ^ 0xf1f1f1f1ull, flush_counter_++, len);
      r.max_tokens = 1;
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      streams.push_back(e_.submit(std::move(r)));
    }
    e_.run_until_idle();
    for (auto& s : streams) {
      StreamEvent ev;
      while (s->try_next(&ev))
        if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError)
          return make_error("a flush request failed: " + ev.error);
    }
    return {};
  }

 private:
  // Eviction traffic: BOS and A + T tokens of its own (the mode's prompt length), nothing shared with anything.
  Result<GenerationRequest> unrelated_request(int64_t index) {
    GenerationRequest r;
    r.id = "u" + std::to_string(index);
    r.max_tokens = spec_.gen_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    r.prompt = bos_tokens(m_);
    const std::vector<int32_t> own = own_tokens(m_, setup_.seed ^ 0x0bad5eedull, index,
                                                static_cast<int64_t>(prep_.text_tokens.size()) + spec_.context_tokens);
    r.prompt.insert(r.prompt.end(), own.begin(), own.end());
    return r;
  }

  Result<GenerationRequest> make_request(int64_t index, Wave* w) {
    GenerationRequest r;
    r.id = "r" + std::to_string(index);
    r.max_tokens = spec_.gen_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    const std::vector<int32_t> own = own_tokens(m_, setup_.seed, index, spec_.context_tokens);
    switch (spec_.mode) {
      case BenchMode::kNone:
        r.prompt = bos_tokens(m_);
        break;
      case BenchMode::kText:
      case BenchMode::kTextCached:
      case BenchMode::kTextCachedEvicted:
      case BenchMode::kPeer:
        r.prompt = prep_.text_tokens;
        break;
      case BenchMode::kAnchor:
      case BenchMode::kAnchorLayers:
        r.anchor = prep_.signed_anchor.digest;
        break;
      case BenchMode::kRag: {
        const auto start = MonoClock::now();
        const SnippetStore::Hit hit = setup_.store->nearest(rag_query_for(prep_.text));
        const std::string& snippet = setup_.store->text(hit.index);
        r.prompt = m_.tokenizer().encode(snippet, /*add_special=*/true, false);
        w->retrieval.push_back(ms_between(start, MonoClock::now()));
        if (snippet == prep_.text) ++w->retrieval_hits;
        break;
      }
    }
    r.prompt.insert(r.prompt.end(), own.begin(), own.end());
    return r;
  }

  const BenchSetup& setup_;
  const CellSpec& spec_;
  Engine& e_;
  const Prepared& prep_;
  const Model& m_;
  int64_t flush_counter_ = 0;
};

EngineConfig cell_config(const BenchSetup& setup, BenchMode mode, AnchorRecheckCadence cadence,
                         const std::map<std::string, std::string>* envelopes) {
  EngineConfig c = setup.engine;
  c.enable_prefix_caching = mode != BenchMode::kText;
  c.anchor_recheck.cadence = cadence;
  if (cadence != AnchorRecheckCadence::kSession && envelopes) {
    BenchAnchorSigner* signer = setup.signer;
    c.anchor_recheck.verify_signature = [signer, envelopes](const std::string& digest) -> Status {
      auto it = envelopes->find(digest);
      if (it == envelopes->end()) return make_error("no envelope for anchor " + digest);
      return signer->verify_again(it->second);
    };
  }
  return c;
}

Status activate(Engine& e, const BenchSetup& setup, BenchMode mode, Prepared* prep) {
  AnchorServing serving;
  if (mode == BenchMode::kAnchorLayers) serving.visible_layers = setup.visible_layers;
  auto future = e.activate_anchor(prep->signed_anchor.digest, prep->signed_anchor.tokens, serving);
  e.step();
  auto activation = future.get();
  if (!activation.ok()) return activation.error();
  prep->activation = *activation;
  return {};
}

}  // namespace

std::vector<int32_t> bench_own_tokens(const Model& m, uint64_t seed, int64_t request, int64_t n) {
  Rng rng(seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(request) + 1);
  std::vector<int32_t> ids(n);
  const uint64_t span = static_cast<uint64_t>(m.hparams().n_vocab - 3);
  for (auto& id : ids) id = static_cast<int32_t>(3 + rng.next_u64() % span);
  return ids;
}

std::vector<int32_t> bench_bos_tokens(const Model& m) { return m.tokenizer().encode("", /*add_special=*/true, false); }

const char* bench_mode_name(BenchMode m) {
  switch (m) {
    case BenchMode::kNone: return "none";
    case BenchMode::kText: return "text";
    case BenchMode::kTextCached: return "text-cached";
    case BenchMode::kTextCachedEvicted: return "text-cached-evicted";
    case BenchMode::kAnchor: return "anchor";
    case BenchMode::kAnchorLayers: return "anchor-layers";
    case BenchMode::kRag: return "rag";
    case BenchMode::kPeer: return "peer";
  }
  return "?";
}

Result<std::vector<BenchMode>> parse_bench_modes(const std::vector<std::string>& names) {
  std::vector<BenchMode> out;
  auto add = [&](BenchMode m) {
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  for (const std::string& n : names) {
    bool found = false;
    for (BenchMode m : {BenchMode::kNone, BenchMode::kText, BenchMode::kTextCached, BenchMode::kTextCachedEvicted,
                        BenchMode::kAnchor, BenchMode::kAnchorLayers, BenchMode::kRag, BenchMode::kPeer})
      if (n == bench_mode_name(m)) {
        add(m);
        if (m == BenchMode::kTextCached) add(BenchMode::kTextCachedEvicted);
        found = true;
      }
    if (!found)
      return make_error("unknown mode '" + n +
                        "' (none, text, text-cached, text-cached-evicted, anchor, anchor-layers, rag, peer)");
  }
  return out;
}

bool mode_has_anchor(BenchMode m) { return m == BenchMode::kAnchor || m == BenchMode::kAnchorLayers; }
bool mode_uses_anchor_text(BenchMode m) { return m != BenchMode::kNone; }

std::string bench_anchor_text(const Model& model, int32_t anchor_tokens, uint64_t seed) {
  return anchor_text_of_length(model.tokenizer(), anchor_tokens, seed * 131 + anchor_tokens);
}

std::string rag_query_for(const std::string& anchor_text) {
  // The anchor's first sentence: what a user asking about those facts would share with it.
  return first_sentence(anchor_text);
}

Result<CellResult> run_cell(const BenchSetup& setup, const CellSpec& spec, const ProgressFn& progress) {
  const Model& m = *setup.model;
  const BenchMode mode = spec.mode;
  if (spec.gen_tokens < 1 || spec.concurrency < 1 || spec.waves < 1 || spec.context_tokens < 1)
    return make_error("a cell needs gen >= 1, concurrency >= 1, waves >= 1 and context >= 1");
  if (mode != BenchMode::kNone && spec.anchor_tokens < 2)
    return make_error(std::string("mode ") + bench_mode_name(mode) + " needs an anchor of at least 2 tokens");
  if (mode_has_anchor(mode) && !setup.signer) return make_error("anchor modes need a signer");
  if (mode == BenchMode::kRag && !setup.store) return make_error("rag needs a snippet store");
  if (spec.cadence != AnchorRecheckCadence::kSession && !mode_has_anchor(mode))
    return make_error("a verification cadence applies to the anchor modes only");
  if (mode == BenchMode::kPeer) return make_error("the peer mode runs against llama-server (--peer-url)");

  Prepared prep;
  if (mode != BenchMode::kNone) {
    prep.text = bench_anchor_text(m, spec.anchor_tokens, setup.seed);
    prep.text_tokens = m.tokenizer().encode(prep.text, /*add_special=*/true, false);
  }
  std::map<std::string, std::string> envelopes;
  if (mode_has_anchor(mode)) {
    auto s = setup.signer->sign_and_verify(prep.text, "A" + std::to_string(spec.anchor_tokens));
    if (!s.ok()) return s.error();
    prep.signed_anchor = std::move(*s);
    envelopes[prep.signed_anchor.digest] = prep.signed_anchor.envelope_json;
  }
  EngineConfig config = cell_config(setup, mode, spec.cadence, &envelopes);
  const int64_t A = mode == BenchMode::kNone ? 0 : static_cast<int64_t>(prep.text_tokens.size());
  const int64_t bs = config.block_size;
  if (mode == BenchMode::kTextCachedEvicted) {
    // A pool just larger than one wave, so that flushing it costs about one wave's prefill.
    const int64_t per_seq = ceil_div(A + spec.context_tokens + spec.gen_tokens + bs, bs);
    config.num_blocks = per_seq * spec.concurrency * 5 / 4 + 4;
    config.kv_cache_bytes = 0;
  }
  auto created = Engine::create(m, config);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  if (mode_has_anchor(mode))
    if (Status st = activate(e, setup, mode, &prep); !st.ok()) return st.error();

  CellRunner runner(setup, spec, e, prep);
  // Warm-up: one request (primes the prefix cache with the anchor text in the cached modes).
  if (auto warm = runner.run_wave(-1, 1); !warm.ok()) return warm.error();
  const EngineStats before = e.stats();
  std::vector<double> ttft, itl, e2e, retrieval;
  int64_t tokens = 0, decode_tokens = 0, hits = 0;
  double seconds = 0, decode_seconds = 0;
  int32_t peak_used = 0;
  for (int32_t w = 0; w < spec.waves; ++w) {
    if (progress)
      progress(std::string(bench_mode_name(mode)) + " A=" + std::to_string(A) + " T=" +
               std::to_string(spec.context_tokens) + " C=" + std::to_string(spec.concurrency) + " cadence=" +
               anchor_recheck_cadence_name(spec.cadence) + " wave " + std::to_string(w + 1) + "/" +
               std::to_string(spec.waves));
    if (mode == BenchMode::kTextCachedEvicted)
      if (Status st = runner.flush(); !st.ok()) return st.error();
    const EngineStats wave_start = e.stats();
    auto wave = runner.run_wave(static_cast<int64_t>(w) * spec.concurrency, spec.concurrency);
    if (!wave.ok()) return wave.error();
    ttft.insert(ttft.end(), wave->ttft.begin(), wave->ttft.end());
    itl.insert(itl.end(), wave->itl.begin(), wave->itl.end());
    e2e.insert(e2e.end(), wave->e2e.begin(), wave->e2e.end());
    retrieval.insert(retrieval.end(), wave->retrieval.begin(), wave->retrieval.end());
    tokens += wave->tokens;
    decode_tokens += wave->decode_tokens;
    hits += wave->retrieval_hits;
    seconds += wave->seconds;
    decode_seconds += wave->decode_seconds;
    peak_used = std::max(peak_used, wave->peak_used_blocks - wave_start.blocks.used_blocks);
  }
  const EngineStats after = e.stats();

  CellResult r;
  r.spec = spec;
  r.kv_dtype = kv_dtype_name(e.pool_shape().dtype);
  r.anchor_tokens = static_cast<int32_t>(A);
  r.requests = static_cast<int64_t>(spec.waves) * spec.concurrency;
  r.ttft_ms = loadgen::summarize(ttft);
  r.itl_ms = loadgen::summarize(itl);
  r.e2e_ms = loadgen::summarize(e2e);
  r.retrieval_ms = loadgen::summarize(retrieval);
  r.retrieval_hit_rate = retrieval.empty() ? 0.0 : static_cast<double>(hits) / retrieval.size();
  r.output_tok_s = seconds > 0 ? tokens / seconds : 0;
  r.decode_tok_s = decode_seconds > 0 ? decode_tokens / decode_seconds : 0;
  r.prefill_tokens_computed = after.prompt_tokens_computed - before.prompt_tokens_computed;
  r.prefix_hit_tokens = after.blocks.prefix_hit_tokens - before.blocks.prefix_hit_tokens;
  r.preemptions = after.preemptions - before.preemptions;
  r.rechecks = after.anchor_rechecks - before.anchor_rechecks;
  r.recheck_seconds = after.anchor_recheck_seconds - before.anchor_recheck_seconds;
  const KvPoolShape& shape = e.pool_shape();
  const double token_bytes = 2.0 * shape.n_layer * static_cast<double>(shape.slot_bytes());
  r.block_bytes = shape.bytes_per_block();
  // Pinned blocks stay in use through every wave: the wave's own blocks are what it added above them.
  r.kv_bytes_per_request = static_cast<double>(peak_used) * r.block_bytes / spec.concurrency;
  r.measured_blocks_per_request = static_cast<double>(peak_used) / spec.concurrency;
  const int64_t prompt_own = spec.context_tokens + (mode == BenchMode::kNone ? static_cast<int64_t>(bos_tokens(m).size()) : 0);
  const int64_t text_in_prompt = (mode == BenchMode::kNone || mode_has_anchor(mode)) ? 0 : A;
  r.kv_bytes_per_request_formula = token_bytes * static_cast<double>(text_in_prompt + prompt_own + spec.gen_tokens);
  r.anchor_kv_bytes_formula = token_bytes * static_cast<double>(A);
  // The peak is read after a step: the sequences then hold K/V for their prompt and all but the last two
  // generated tokens (the last sampled token is never computed, and the step that samples it frees the sequence).
  const int64_t held = A + prompt_own + std::max<int64_t>(spec.gen_tokens - 2, 0);
  r.expected_blocks_per_request = mode_has_anchor(mode) ? ceil_div(held, bs) - A / bs : ceil_div(held, bs);
  if (mode_has_anchor(mode)) {
    r.pinned_bytes = static_cast<uint64_t>(prep.activation.blocks) * r.block_bytes;
    r.anchor_verify_ms = prep.signed_anchor.verify_seconds * 1e3;
    r.anchor_prefill_ms = prep.activation.prefill_seconds * 1e3;
  }
  return r;
}

Result<ArrivalResult> run_arrival_cell(const BenchSetup& setup, const ArrivalSpec& spec) {
  const Model& m = *setup.model;
  const BenchMode mode = spec.cell.mode;
  if (mode == BenchMode::kPeer || mode == BenchMode::kTextCachedEvicted)
    return make_error(std::string("Poisson arrivals: the ") + bench_mode_name(mode) + " mode is not supported");
  if (mode != BenchMode::kNone && spec.cell.anchor_tokens < 2) return make_error("an anchor needs at least 2 tokens");
  if (!(spec.rate > 0) || spec.requests < 1) return make_error("Poisson arrivals need a rate > 0 and requests >= 1");
  if (!(spec.unrelated_share >= 0 && spec.unrelated_share <= 0.95))
    return make_error("Poisson arrivals: the unrelated share must be in [0, 0.95]");
  if (mode == BenchMode::kRag && setup.store == nullptr) return make_error("the rag mode needs a snippet store");
  Prepared prep;
  if (mode != BenchMode::kNone) {
    prep.text = bench_anchor_text(m, spec.cell.anchor_tokens, setup.seed);
    prep.text_tokens = m.tokenizer().encode(prep.text, /*add_special=*/true, false);
  }
  if (mode_has_anchor(mode)) {
    auto s = setup.signer->sign_and_verify(prep.text, "P" + std::to_string(spec.cell.anchor_tokens));
    if (!s.ok()) return s.error();
    prep.signed_anchor = std::move(*s);
  }
  EngineConfig config = cell_config(setup, mode, AnchorRecheckCadence::kSession, nullptr);
  auto created = Engine::create(m, config);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  if (mode_has_anchor(mode))
    if (Status st = activate(e, setup, mode, &prep); !st.ok()) return st.error();
  CellRunner runner(setup, spec.cell, e, prep);
  if (auto warm = runner.run_wave(-1, 1); !warm.ok()) return warm.error();  // as the cells: one warm-up request
  Rng rng(setup.seed * 0x9e3779b97f4a7c15ull + spec.round * 7919 + 17);
  const int32_t total =
      spec.requests + static_cast<int32_t>(std::lround(spec.requests * spec.unrelated_share / (1 - spec.unrelated_share)));
  const std::vector<double> arrivals = loadgen::arrival_times(rng, total, spec.rate);
  std::vector<uint8_t> unrelated(total, 0);
  std::fill(unrelated.begin() + spec.requests, unrelated.end(), 1);
  for (int32_t i = total - 1; i > 0; --i)  // Fisher-Yates with the round's generator: every mode, the same order
    std::swap(unrelated[i], unrelated[rng.next_u64() % static_cast<uint64_t>(i + 1)]);
  auto r = runner.run_arrivals(static_cast<int64_t>(spec.round) * total, arrivals, unrelated, spec.slo_ttft_ms,
                               spec.slo_itl_ms);
  if (!r.ok()) return r.error();
  r->spec = spec;
  return r;
}

Result<CapacityResult> measure_capacity(const BenchSetup& setup, BenchMode mode, int32_t anchor_tokens,
                                        int64_t context_tokens, int64_t gen_tokens, int64_t num_blocks) {
  const Model& m = *setup.model;
  if (mode != BenchMode::kNone && anchor_tokens < 2) return make_error("an anchor needs at least 2 tokens");
  Prepared prep;
  if (mode != BenchMode::kNone) {
    prep.text = bench_anchor_text(m, anchor_tokens, setup.seed);
    prep.text_tokens = m.tokenizer().encode(prep.text, true, false);
  }
  if (mode_has_anchor(mode)) {
    auto s = setup.signer->sign_and_verify(prep.text, "cap" + std::to_string(anchor_tokens));
    if (!s.ok()) return s.error();
    prep.signed_anchor = std::move(*s);
  }
  EngineConfig config = cell_config(setup, mode, AnchorRecheckCadence::kSession, nullptr);
  config.num_blocks = num_blocks;
  config.kv_cache_bytes = 0;
  config.max_num_seqs = 4096;
  config.anchor_max_pinned_frac = 0.5;
  auto created = Engine::create(m, config);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  if (mode_has_anchor(mode))
    if (Status st = activate(e, setup, mode, &prep); !st.ok()) return st.error();
  const int64_t A = mode == BenchMode::kNone ? 0 : static_cast<int64_t>(prep.text_tokens.size());
  const int64_t bs = config.block_size;
  const int32_t pinned = mode_has_anchor(mode) ? prep.activation.blocks : 0;
  const int64_t prompt_own = context_tokens + (mode == BenchMode::kNone ? 1 : 0);
  const int64_t full = A + prompt_own + gen_tokens;
  const int64_t per_seq = mode_has_anchor(mode) ? ceil_div(full, bs) - A / bs : ceil_div(full, bs);
  const int64_t admitted = A + prompt_own + 1;  // the prefill and the slot of the first generated token
  const int64_t per_seq_admitted = mode_has_anchor(mode) ? ceil_div(admitted, bs) - A / bs : ceil_div(admitted, bs);
  const int64_t watermark = config.watermark_blocks >= 0 ? config.watermark_blocks : num_blocks / 100;
  CapacityResult out;
  out.mode = mode;
  out.anchor_tokens = static_cast<int32_t>(A);
  out.context_tokens = context_tokens;
  out.gen_tokens = gen_tokens;
  out.num_blocks = num_blocks;
  out.pinned_blocks = pinned;
  out.predicted = static_cast<int32_t>(std::max<int64_t>(0, (num_blocks - pinned - watermark) / per_seq));
  out.predicted_at_admission =
      static_cast<int32_t>(std::max<int64_t>(0, (num_blocks - pinned - watermark) / per_seq_admitted));
  // Submit more than fit; the peak of running sequences is the pool's capacity for this shape.
  const int32_t n = std::min<int32_t>(out.predicted_at_admission + 4, 4096);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int32_t i = 0; i < n; ++i) {
    GenerationRequest r;
    r.max_tokens = gen_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    if (mode == BenchMode::kNone) r.prompt = bos_tokens(m);
    else if (mode_has_anchor(mode)) r.anchor = prep.signed_anchor.digest;
    else r.prompt = prep.text_tokens;  // text modes; rag would retrieve the same text
    const auto own = own_tokens(m, setup.seed, i, context_tokens);
    r.prompt.insert(r.prompt.end(), own.begin(), own.end());
    streams.push_back(e.submit(std::move(r)));
  }
  while (e.step()) {
    const EngineStats st = e.stats();
    out.peak_running = std::max(out.peak_running, st.running);
    for (auto& s : streams) {
      StreamEvent ev;
      while (s->try_next(&ev))
        if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError)
          return make_error("a capacity request failed: " + ev.error);
    }
  }
  out.preemptions = e.stats().preemptions;
  return out;
}

}  // namespace pagoda::anchorbench
