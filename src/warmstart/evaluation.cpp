#include "warmstart/evaluation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "kernels/cpu/matmul.h"
#include "model/kv_cache.h"
#include "model/transformer.h"
#include "warmstart/kv_summary.h"
#include "warmstart/library.h"
#include "warmstart/prompt_embedding.h"
#include "warmstart/prompt_state.h"
#include "warmstart/qa_data.h"
#include "warmstart/slot_forward.h"
#include "util/rng.h"

namespace pagoda::warmstart {

namespace {

std::vector<double> log_softmax(const std::vector<float>& logits) {
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : logits) mx = std::max(mx, static_cast<double>(x));
  double z = 0;
  for (float x : logits) z += std::exp(x - mx);
  const double lz = mx + std::log(z);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - lz;
  return out;
}

using MonoClock = std::chrono::steady_clock;

template <typename F>
double median_seconds(int repeats, F&& fn) {
  std::vector<double> t;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto t0 = MonoClock::now();
    fn();
    t.push_back(std::chrono::duration<double>(MonoClock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The engine's own single-sequence path (default KV type): the cold reference and every exact continuation.
class ColdPath {
 public:
  ColdPath(const Model& model, ThreadPool& pool)
      : model_(model), pool_(pool), cache_(model.hparams(), model.hparams().n_ctx_train) {}

  // Runs tokens[from..) after keeping the first `from` cached tokens; returns the last token's logits.
  Status prefill(const std::vector<int32_t>& tokens, int64_t from, std::vector<float>& logits) {
    return run_at(from, std::span(tokens).subspan(from), logits);
  }
  Status step(int32_t token, std::vector<float>& logits) {
    return transformer_forward(model_, std::span(&token, 1), cache_, ws_, pool_, false, logits);
  }
  // Runs `tokens` at positions start.. over whatever the cache holds before `start` (a blended cache).
  Status run_at(int64_t start, std::span<const int32_t> tokens, std::vector<float>& logits) {
    cache_.set_length(start);
    return transformer_forward(model_, tokens, cache_, ws_, pool_, false, logits);
  }
  Status all_logits(std::span<const int32_t> tokens, std::vector<float>& logits) {
    return transformer_forward(model_, tokens, cache_, ws_, pool_, true, logits);
  }
  ContiguousKvCache& cache() { return cache_; }

 private:
  const Model& model_;
  ThreadPool& pool_;
  ContiguousKvCache cache_;
  TransformerWorkspace ws_;
};

}  // namespace

double kl_divergence(const std::vector<float>& logits_p, const std::vector<float>& logits_q) {
  const auto lp = log_softmax(logits_p), lq = log_softmax(logits_q);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(kl, 0.0);
}

std::vector<SearchScaling> measure_search_scaling(int64_t dim, const std::vector<int64_t>& sizes) {
  std::vector<SearchScaling> out;
  Rng rng(5);
  auto normalise = [](std::vector<float>& v) {
    double n = 0;
    for (float x : v) n += static_cast<double>(x) * x;
    for (auto& x : v) x = static_cast<float>(x / std::sqrt(n));
  };
  auto unit = [&] {
    std::vector<float> v(dim);
    for (auto& x : v) x = static_cast<float>(rng.next_normal());
    normalise(v);
    return v;
  };
  constexpr int kQueries = 50;
  for (int64_t size : sizes) {
    WarmStartLibrary lib(std::numeric_limits<uint64_t>::max());
    lib.set_approximate_from(0);  // exact first
    for (int64_t i = 0; i < size; ++i) lib.insert({{}, unit(), SlotCache{}});
    std::vector<std::vector<float>> queries;
    for (int q = 0; q < kQueries; ++q) {
      std::vector<float> v = lib.entry(static_cast<int64_t>(rng.next_u64() % size)).embedding;
      const auto noise = unit();
      for (int64_t c = 0; c < dim; ++c) v[c] += 0.48f * noise[c];  // cosine about 0.9 to the source
      normalise(v);
      queries.push_back(std::move(v));
    }
    SearchScaling r;
    r.entries = size;
    r.exact_ms = 1e3 * median_seconds(5, [&] { (void)lib.nearest(queries[0]); });
    lib.set_approximate_from(1);
    const auto t0 = MonoClock::now();
    (void)lib.nearest(queries[0]);  // builds the index
    r.index_build_s = std::chrono::duration<double>(MonoClock::now() - t0).count();
    r.approximate_ms = 1e3 * median_seconds(5, [&] { (void)lib.nearest(queries[1]); });
    int agree = 0;
    for (const auto& q : queries) agree += lib.nearest(q)->index == lib.nearest_exact(q)->index;
    r.recall_at_1 = static_cast<double>(agree) / kQueries;
    out.push_back(r);
  }
  return out;
}

int32_t argmax(const std::vector<float>& logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Result<EvalResult> evaluate(const Model& model, const std::vector<PromptPair>& test,
                            const std::vector<LibraryDistractor>& distractors, const std::vector<WarmStartMaps>& maps,
                            const EvalOptions& o, const std::function<void(int64_t, int64_t)>& progress) {
  if (maps.empty()) return make_error("warm start eval: no maps given");
  const SummaryOptions& so = maps.front().summary;
  for (const auto& m : maps) {
    PAGODA_RETURN_IF_ERROR(check_maps_fit_model(m, model.hparams()));
    if (m.summary.m != so.m || m.summary.ref_positions != so.ref_positions || m.summary.value_ridge != so.value_ridge)
      return make_error("warm start eval: every maps file must use the same summary settings (m, R, ridge)");
  }
  const ModelHParams& hp = model.hparams();
  const Tokenizer& tok = model.tokenizer();
  ThreadPool pool(o.threads);
  TransformerWorkspace ws;
  ColdPath cold(model, pool);
  EvalResult result;
  for (const auto& name : o.methods)
    if (std::find(kEvalMethods.begin(), kEvalMethods.end(), name) == kEvalMethods.end())
      return make_error("warm start eval: unknown method '" + name + "' (known: served, projected, no-projection, "
                        "oracle-summary, oracle-summary:R=1, neighbour-kv, neighbour-kv-blend, response-cache, "
                        "no-cache, prefix-cache)");
  auto wants = [&](const std::string& name) {
    return o.methods.empty() || std::find(o.methods.begin(), o.methods.end(), name) != o.methods.end();
  };
  for (const auto& name : kEvalMethods) {
    if (!wants(name)) continue;
    if (name != "projected") {
      result.methods.push_back(name);
      continue;
    }
    for (const auto& m : maps) result.methods.push_back("projected:" + to_string(m.projector.form()));
  }

  // Keep the pairs whose prompts fit: prefix >= m, prompt + continuation + quality tokens inside the context.
  struct Item {
    const PromptPair* pair;
    std::vector<int32_t> source, target, continuation;
  };
  std::vector<Item> items;
  for (const auto& p : test) {
    Item it{&p, tok.encode(p.source, true), tok.encode(p.target, true), tok.encode(" " + p.continuation, false)};
    const int64_t need = static_cast<int64_t>(std::max(it.source.size(), it.target.size()) + it.continuation.size()) +
                         o.quality_tokens + 1;
    if (static_cast<int64_t>(std::min(it.source.size(), it.target.size())) < so.m + 1 || need > hp.n_ctx_train ||
        it.continuation.empty()) {
      ++result.skipped;
      continue;
    }
    items.push_back(std::move(it));
  }
  if (items.empty()) return make_error("warm start eval: no test pair fits the model's context and m");

  // The library: every test source's summary, then the distractors'; and, for the baselines, their cold
  // first-token logits and tokens.
  const auto lib_t0 = MonoClock::now();
  WarmStartLibrary library(std::numeric_limits<uint64_t>::max());
  std::vector<std::vector<float>> source_cold_logits;
  std::vector<std::vector<int32_t>> library_tokens;
  std::vector<std::string> library_kind;  // "source" or a distractor's kind
  int64_t kv_bytes_sum = 0;
  // Every entry is searched (each request reports its nearest neighbour); its summary and cold logits are computed
  // only when a selected method reads them (`--methods`), since each costs a forward pass over the entry's prompt.
  const bool needs_summaries = wants("served") || wants("projected") || wants("no-projection");
  const bool needs_source_logits = wants("response-cache");
  auto add_entry = [&](const std::vector<int32_t>& tokens, const std::string& kind) -> Status {
    SlotCache summary;
    if (needs_summaries) {
      auto state = run_prompt(model, tokens, pool, ws);
      if (!state.ok()) return state.error();
      auto fitted = summarize_prefix(hp, *state, so);
      if (!fitted.ok()) return fitted.error();
      summary = std::move(*fitted);
      result.summary_bytes = static_cast<int64_t>(summary.bytes());
    }
    library.insert(LibraryEntry{tokens, embed_prompt(model, tokens), std::move(summary)});
    std::vector<float> logits;
    if (needs_source_logits) PAGODA_RETURN_IF_ERROR(cold.prefill(tokens, 0, logits));
    source_cold_logits.push_back(std::move(logits));
    library_tokens.push_back(tokens);
    library_kind.push_back(kind);
    return Status::success();
  };
  for (const auto& it : items) {
    PAGODA_RETURN_IF_ERROR(add_entry(it.source, "source"));
    kv_bytes_sum += static_cast<int64_t>(it.source.size()) * 2 * hp.n_layer * hp.kv_dim() * 2;
  }
  for (const auto& d : distractors) {
    const auto tokens = tok.encode(d.text, true);
    if (static_cast<int64_t>(tokens.size()) < so.m + 1 || static_cast<int64_t>(tokens.size()) > hp.n_ctx_train) continue;
    PAGODA_RETURN_IF_ERROR(add_entry(tokens, d.near_miss ? "near-miss" : "unrelated"));
  }
  result.library_entries = static_cast<int64_t>(library_tokens.size());
  result.library_seconds = std::chrono::duration<double>(MonoClock::now() - lib_t0).count();
  result.library_bytes = static_cast<int64_t>(library.bytes());
  result.full_kv_bytes_mean = kv_bytes_sum / static_cast<int64_t>(items.size());

  std::vector<float> logits, scratch;
  for (size_t idx = 0; idx < items.size(); ++idx) {
    const Item& it = items[idx];
    RequestOutcome r;
    r.template_id = it.pair->template_id;
    r.instance = it.pair->instance;
    r.adversarial = it.pair->adversarial;
    r.target_tokens = static_cast<int64_t>(it.target.size());
    const int64_t T = r.target_tokens;

    // Cold reference: first-token logits, greedy continuation, continuation log-likelihood.
    std::vector<float> cold_logits;
    PAGODA_RETURN_IF_ERROR(cold.prefill(it.target, 0, cold_logits));
    std::vector<int32_t> cold_greedy = {argmax(cold_logits)};
    for (int i = 1; i < o.quality_tokens; ++i) {
      PAGODA_RETURN_IF_ERROR(cold.step(cold_greedy.back(), logits));
      cold_greedy.push_back(argmax(logits));
    }
    r.has_answer = !it.pair->answer.empty();
    r.cold_correct = r.has_answer && answer_matches(tok.decode(cold_greedy), it.pair->answer);
    cold.cache().set_length(T);
    PAGODA_RETURN_IF_ERROR(cold.all_logits(it.continuation, scratch));
    const int64_t C = static_cast<int64_t>(it.continuation.size());
    double rest_ll = 0;  // log p of continuation tokens 2.. (exact cache after token 1)
    for (int64_t i = 0; i + 1 < C; ++i) {
      std::vector<float> row(scratch.begin() + i * hp.n_vocab, scratch.begin() + (i + 1) * hp.n_vocab);
      rest_ll += log_softmax(row)[it.continuation[i + 1]];
    }
    r.continuation_tokens = C;
    r.cold_continuation_ll = log_softmax(cold_logits)[it.continuation[0]] + rest_ll;

    // Search.
    const auto embedding = embed_prompt(model, it.target);
    const auto hit = library.nearest(embedding);
    const int64_t n = hit->index;
    r.similarity = hit->similarity;
    r.hit = !o.warm_start_off && hit->similarity >= o.tau;
    r.neighbour_is_own_source = n == static_cast<int64_t>(idx);
    r.neighbour_kind = r.neighbour_is_own_source ? "own-source" : library_kind[n] == "source" ? "other-source" : library_kind[n];
    r.neighbour_tokens = static_cast<int64_t>(library_tokens[n].size());
    auto search = [&] {
      auto e = embed_prompt(model, it.target);
      return library.nearest(e);
    };
    // What a projector reads of the target beside the entry's summary: the embedding difference, only if it needs it
    // (as the service does, so the timed warm path does the same work).
    auto delta_to = [&](const Projector& p, int64_t entry) {
      return p.needs_target() ? embedding_difference(embedding, library.entry(entry).embedding) : std::vector<float>{};
    };

    // Each method: (first-token logits, a timed servable computation).
    auto time_it = [&](auto&& fn) { return median_seconds(o.timing_repeats, fn); };
    auto finish = [&](MethodOutcome& m, const std::vector<float>& first) -> Status {
      m.kl_method_cold = kl_divergence(first, cold_logits);
      m.kl_cold_method = kl_divergence(cold_logits, first);
      const int32_t w1 = argmax(first);
      m.top1_agree = w1 == cold_greedy[0];
      m.continuation_ll = log_softmax(first)[it.continuation[0]] + rest_ll;
      if (m.top1_agree) {
        m.agree_tokens = o.quality_tokens;  // token 1 equal: the exact path from token 2 is the cold one
        m.correct = r.cold_correct;
      } else {
        // Token 1 forced to the method's choice, tokens 2.. greedy from the exact cache.
        PAGODA_RETURN_IF_ERROR(cold.prefill(it.target, 0, logits));  // other methods reused the cache
        int32_t t = w1;
        m.agree_tokens = 0;
        std::vector<int32_t> generated;
        for (int i = 0; i < o.quality_tokens; ++i) {
          m.agree_tokens += t == cold_greedy[i];
          generated.push_back(t);
          if (i + 1 == o.quality_tokens) break;
          PAGODA_RETURN_IF_ERROR(cold.step(t, logits));
          t = argmax(logits);
        }
        m.correct = r.has_answer && answer_matches(tok.decode(generated), it.pair->answer);
      }
      return Status::success();
    };
    auto add = [&](const std::string& name, const std::vector<float>& first, double ttft) -> Status {
      MethodOutcome m;
      m.method = name;
      m.ttft_s = ttft;
      PAGODA_RETURN_IF_ERROR(finish(m, first));
      r.methods.push_back(std::move(m));
      return Status::success();
    };

    r.cold_ttft_s = time_it([&] { (void)cold.prefill(it.target, 0, logits); });
    r.cold_token2_s = time_it([&] {
      (void)cold.prefill(it.target, 0, logits);
      (void)cold.step(argmax(logits), scratch);
    });

    // served: what --warm-start serves (projected with the first maps on a hit, cold otherwise).
    const Projector& served_projector = maps.front().projector;
    auto served_first = [&](std::vector<float>& out) -> Status {
      const auto h = search();
      if (!o.warm_start_off && h && h->similarity >= o.tau) {
        auto projected = served_projector.apply(library.entry(h->index).summary, delta_to(served_projector, h->index));
        if (!projected.ok()) return projected.error();
        return slot_forward(model, it.target.back(), *projected, pool, ws, out);
      }
      return cold.prefill(it.target, 0, out);
    };
    std::vector<float> first;
    if (wants("served")) {
      PAGODA_RETURN_IF_ERROR(served_first(first));
      PAGODA_RETURN_IF_ERROR(add("served", first, time_it([&] { (void)served_first(scratch); })));
      r.served_token2_s = time_it([&] {
        (void)served_first(scratch);
        if (r.hit) (void)cold.prefill(it.target, 0, logits);  // the exact prefill still runs
        (void)cold.step(argmax(scratch), logits);
      });
    }

    for (const auto& m : maps) {
      if (!wants("projected")) break;
      auto run = [&](std::vector<float>& out) -> Status {
        const auto h = search();
        auto projected = m.projector.apply(library.entry(h->index).summary, delta_to(m.projector, h->index));
        if (!projected.ok()) return projected.error();
        return slot_forward(model, it.target.back(), *projected, pool, ws, out);
      };
      PAGODA_RETURN_IF_ERROR(run(first));
      PAGODA_RETURN_IF_ERROR(add("projected:" + to_string(m.projector.form()), first, time_it([&] { (void)run(scratch); })));
    }
    if (wants("no-projection")) {
      auto run = [&](std::vector<float>& out) -> Status {
        const auto h = search();
        return slot_forward(model, it.target.back(), library.entry(h->index).summary, pool, ws, out);
      };
      PAGODA_RETURN_IF_ERROR(run(first));
      PAGODA_RETURN_IF_ERROR(add("no-projection", first, time_it([&] { (void)run(scratch); })));
    }
    if (wants("oracle-summary") || wants("oracle-summary:R=1")) {
      auto state = run_prompt(model, it.target, pool, ws);
      if (!state.ok()) return state.error();
      if (wants("oracle-summary")) {
        auto own = summarize_prefix(hp, *state, so);
        if (!own.ok()) return own.error();
        PAGODA_RETURN_IF_ERROR(slot_forward(model, it.target.back(), *own, pool, ws, first));
        PAGODA_RETURN_IF_ERROR(add("oracle-summary", first, time_it([&] { (void)slot_forward(model, it.target.back(), *own, pool, ws, scratch); })));
      }
      if (wants("oracle-summary:R=1")) {
        SummaryOptions r1 = so;
        r1.ref_positions = 1;  // the next token's own query only: the seed's objective for C
        auto own_r1 = summarize_prefix(hp, *state, r1);
        if (!own_r1.ok()) return own_r1.error();
        PAGODA_RETURN_IF_ERROR(slot_forward(model, it.target.back(), *own_r1, pool, ws, first));
        PAGODA_RETURN_IF_ERROR(add("oracle-summary:R=1", first, time_it([&] { (void)slot_forward(model, it.target.back(), *own_r1, pool, ws, scratch); })));
      }
    }
    if (wants("neighbour-kv")) {
      // The neighbour's exact prefix cache (all but its last token), the target's last token after it.
      const auto& src = library_tokens[n];
      std::vector<int32_t> seq(src.begin(), src.end() - 1);
      seq.push_back(it.target.back());
      PAGODA_RETURN_IF_ERROR(cold.prefill(seq, 0, first));
      const double t = time_it([&] {
        (void)search();
        (void)cold.prefill(seq, static_cast<int64_t>(seq.size()) - 1, scratch);
      });
      PAGODA_RETURN_IF_ERROR(add("neighbour-kv", first, t));
    }
    if (wants("neighbour-kv-blend")) {
      // CacheBlend-style (baseline 4 with recompute): the neighbour's exact cache position by position, with the
      // target's own tokens recomputed where the neighbour has no entry and at the most-deviating aligned
      // positions, about 15% of the prefix in all; then the target's last token over the blend. Deviation: the
      // distance between the two tokens' embedding rows (a context-free stand-in for CacheBlend's layer-1 K/V
      // deviation, which pagoda does not compute). Timed: the recomputation and the last token (the neighbour's
      // cache is stored, not computed).
      const auto& src = library_tokens[n];
      const int64_t P = T - 1, Ps = static_cast<int64_t>(src.size());
      const int64_t budget = std::max<int64_t>(1, (P * o.blend_recompute_percent + 99) / 100);
      std::vector<uint8_t> recompute(P, 0);
      int64_t chosen = 0;
      for (int64_t i = Ps; i < P; ++i, ++chosen) recompute[i] = 1;
      // Positions before the first differing token hold exactly the target's K/V already. After it, differing
      // tokens rank first (by embedding distance), then equal tokens (stale only through their context).
      int64_t first_diff = 0;
      while (first_diff < std::min(P, Ps) && src[first_diff] == it.target[first_diff]) ++first_diff;
      std::vector<std::pair<double, int64_t>> deviation;
      std::vector<float> ra(hp.n_embd), rb(hp.n_embd);
      for (int64_t i = first_diff; i < std::min(P, Ps); ++i) {
        double d = 0;
        if (src[i] != it.target[i]) {
          dequantize_row(model.weights().token_embd, src[i], ra.data());
          dequantize_row(model.weights().token_embd, it.target[i], rb.data());
          for (int64_t c = 0; c < hp.n_embd; ++c) d += double(ra[c] - rb[c]) * (ra[c] - rb[c]);
          d += 1.0;  // above every equal token
        }
        deviation.emplace_back(-d, i);  // ascending: largest deviation first, then lowest position
      }
      std::sort(deviation.begin(), deviation.end());
      for (const auto& dv : deviation) {
        if (chosen >= budget) break;
        recompute[dv.second] = 1;
        ++chosen;
      }
      auto blend = [&](std::vector<float>& out) -> Status {
        for (int64_t i = 0; i < P;) {
          if (!recompute[i]) {
            ++i;
            continue;
          }
          int64_t j = i;
          while (j < P && recompute[j]) ++j;
          PAGODA_RETURN_IF_ERROR(cold.run_at(i, std::span(it.target).subspan(i, j - i), out));
          i = j;
        }
        return cold.run_at(P, std::span(it.target).subspan(P, 1), out);
      };
      std::vector<double> times;
      for (int rep = 0; rep < std::max(o.timing_repeats, 1); ++rep) {
        PAGODA_RETURN_IF_ERROR(cold.prefill(src, 0, scratch));  // the neighbour's stored cache (not timed)
        const auto t0 = MonoClock::now();
        PAGODA_RETURN_IF_ERROR(blend(first));
        times.push_back(std::chrono::duration<double>(MonoClock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      PAGODA_RETURN_IF_ERROR(add("neighbour-kv-blend", first, times[times.size() / 2]));
    }
    if (wants("response-cache"))
      PAGODA_RETURN_IF_ERROR(add("response-cache", source_cold_logits[n], time_it([&] { (void)search(); })));
    if (wants("no-cache")) {
      const SlotCache none = SlotCache::empty_for(hp, 0);
      PAGODA_RETURN_IF_ERROR(slot_forward(model, it.target.back(), none, pool, ws, first));
      PAGODA_RETURN_IF_ERROR(add("no-cache", first, time_it([&] { (void)slot_forward(model, it.target.back(), none, pool, ws, scratch); })));
    }
    if (wants("prefix-cache")) {
      // Exact prefix cache: the target's tokens shared with the neighbour from the start, in whole blocks,
      // leaving at least the last token to run.
      const auto& src = library_tokens[n];
      int64_t common = 0;
      while (common < T - 1 && common < static_cast<int64_t>(src.size()) && src[common] == it.target[common]) ++common;
      common = common / o.prefix_block * o.prefix_block;
      std::vector<int32_t> head(it.target.begin(), it.target.begin() + std::max<int64_t>(common, 1));
      std::vector<double> times;
      for (int rep = 0; rep < std::max(o.timing_repeats, 1); ++rep) {
        if (common > 0) PAGODA_RETURN_IF_ERROR(cold.prefill(head, 0, scratch));  // the cached blocks (not timed)
        const auto t0 = MonoClock::now();
        PAGODA_RETURN_IF_ERROR(cold.prefill(it.target, common, first));
        times.push_back(std::chrono::duration<double>(MonoClock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      PAGODA_RETURN_IF_ERROR(add("prefix-cache", first, times[times.size() / 2]));
    }
    result.requests.push_back(std::move(r));
    if (progress) progress(static_cast<int64_t>(idx + 1), static_cast<int64_t>(items.size()));
  }
  return result;
}

}  // namespace pagoda::warmstart
