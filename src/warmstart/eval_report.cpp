#include "warmstart/eval_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "loadgen/svg_plot.h"
#include "util/confidence_interval.h"

namespace pagoda::warmstart {

namespace {

constexpr double kHighSimilarity = 0.9;  // the draft's criteria set: cosine > 0.9

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

const MethodOutcome* find(const RequestOutcome& r, const std::string& method) {
  for (const auto& m : r.methods)
    if (m.method == method) return &m;
  return nullptr;
}

nlohmann::ordered_json method_stats(const std::vector<const RequestOutcome*>& rs, const std::string& method, int q) {
  std::vector<double> kl_mc, kl_cm, ttft_ratio, ttft, top1, agree, ll_delta;
  std::vector<bool> cold_right, method_right;
  for (const auto* r : rs) {
    const MethodOutcome* m = find(*r, method);
    if (m == nullptr) continue;
    if (r->has_answer) {
      cold_right.push_back(r->cold_correct);
      method_right.push_back(m->correct);
    }
    kl_mc.push_back(m->kl_method_cold);
    kl_cm.push_back(m->kl_cold_method);
    ttft.push_back(m->ttft_s);
    ttft_ratio.push_back(m->ttft_s / r->cold_ttft_s);
    top1.push_back(m->top1_agree ? 1.0 : 0.0);
    agree.push_back(static_cast<double>(m->agree_tokens) / q);
    ll_delta.push_back((m->continuation_ll - r->cold_continuation_ll) / r->continuation_tokens);
  }
  nlohmann::ordered_json j;
  j["n"] = kl_mc.size();
  j["kl_method_cold"] = {{"mean", mean(kl_mc)}, {"median", quantile(kl_mc, 0.5)}, {"p90", quantile(kl_mc, 0.9)}};
  j["kl_cold_method"] = {{"mean", mean(kl_cm)}, {"median", quantile(kl_cm, 0.5)}, {"p90", quantile(kl_cm, 0.9)}};
  j["top1_agreement"] = mean(top1);
  j["ttft_ms_median"] = quantile(ttft, 0.5) * 1e3;
  j["ttft_reduction_mean"] = 1.0 - mean(ttft_ratio);  // mean over requests of 1 - ttft/cold
  j["first_tokens_agreement"] = mean(agree);          // greedy first q tokens vs cold
  j["continuation_ll_per_token_delta"] = mean(ll_delta);
  if (!cold_right.empty()) {
    int32_t right = 0;
    for (bool b : method_right) right += b;
    const Proportion acc = wilson_proportion(right, static_cast<int32_t>(method_right.size()));
    const PairedDifference drop = paired_difference(cold_right, method_right);
    j["answer_accuracy"] = {{"rate", acc.rate}, {"low", acc.low}, {"high", acc.high}, {"n", acc.n}};
    j["accuracy_drop_vs_cold"] = {{"difference", drop.difference}, {"low", drop.low}, {"high", drop.high},
                                  {"only_cold_right", drop.only_a}, {"only_method_right", drop.only_b}};
  }
  return j;
}

nlohmann::ordered_json cold_accuracy(const std::vector<const RequestOutcome*>& rs) {
  int32_t right = 0, n = 0;
  for (const auto* r : rs)
    if (r->has_answer) {
      ++n;
      right += r->cold_correct;
    }
  const Proportion p = wilson_proportion(right, n);
  return {{"rate", p.rate}, {"low", p.low}, {"high", p.high}, {"n", p.n}};
}

// Criterion 3 on answer accuracy: the drop's 95% interval decides; a straddling interval decides nothing.
std::string drop_verdict(double low, double high, double bound) {
  if (high <= bound) return "supported";
  if (low > bound) return "falsified";
  return "not decided (the interval straddles the bound)";
}

}  // namespace

nlohmann::ordered_json request_json(const RequestOutcome& r) {
  nlohmann::ordered_json j;
  j["template"] = r.template_id;
  j["instance"] = r.instance;
  j["adversarial"] = r.adversarial;
  j["target_tokens"] = r.target_tokens;
  j["neighbour_tokens"] = r.neighbour_tokens;
  j["similarity"] = r.similarity;
  j["neighbour_is_own_source"] = r.neighbour_is_own_source;
  j["hit"] = r.hit;
  j["neighbour_kind"] = r.neighbour_kind;
  if (r.has_answer) j["cold_correct"] = r.cold_correct;
  j["cold_ttft_ms"] = r.cold_ttft_s * 1e3;
  j["cold_token2_ms"] = r.cold_token2_s * 1e3;
  j["served_token2_ms"] = r.served_token2_s * 1e3;
  j["cold_continuation_ll"] = r.cold_continuation_ll;
  for (const auto& m : r.methods)
    j["methods"][m.method] = {{"kl_method_cold", m.kl_method_cold}, {"kl_cold_method", m.kl_cold_method},
                              {"top1_agree", m.top1_agree}, {"ttft_ms", m.ttft_s * 1e3},
                              {"agree_tokens", m.agree_tokens}, {"continuation_ll", m.continuation_ll}};
  if (r.has_answer)
    for (const auto& m : r.methods) j["methods"][m.method]["correct"] = m.correct;
  return j;
}

nlohmann::ordered_json summarize_eval(const EvalResult& res, double tau, int q) {
  std::vector<const RequestOutcome*> all, high, hits, paraphrase, adversarial;
  for (const auto& r : res.requests) {
    all.push_back(&r);
    if (r.similarity > kHighSimilarity) high.push_back(&r);
    if (r.hit) hits.push_back(&r);
    (r.adversarial ? adversarial : paraphrase).push_back(&r);
  }
  const bool served_ran = std::find(res.methods.begin(), res.methods.end(), "served") != res.methods.end();
  nlohmann::ordered_json s;
  s["requests"] = all.size();
  s["skipped"] = res.skipped;
  s["high_similarity_requests"] = high.size();
  s["tau"] = tau;
  s["hits"] = hits.size();
  int own = 0;
  for (const auto* r : all) own += r->neighbour_is_own_source;
  s["neighbour_is_own_source_rate"] = all.empty() ? 0.0 : static_cast<double>(own) / all.size();
  {
    std::map<std::string, int> kinds;
    for (const auto* r : all) ++kinds[r->neighbour_kind];
    for (const auto& [kind, n] : kinds) s["nearest_neighbour_kind"][kind] = n;
    // The cost of a false hit: served accuracy against cold, per kind of neighbour hit.
    for (const auto& [kind, n] : kinds) {
      std::vector<const RequestOutcome*> h;
      for (const auto* r : hits)
        if (r->neighbour_kind == kind) h.push_back(r);
      if (h.empty() || !h.front()->has_answer || !served_ran) continue;
      s["hits_by_neighbour_kind"][kind] = {{"hits", h.size()}, {"cold_accuracy", cold_accuracy(h)},
                                           {"served", method_stats(h, "served", q)}};
    }
  }
  s["cold_answer_accuracy"] = cold_accuracy(all);
  s["library"] = {
      {"entries", res.library_entries},
      {"bytes", res.library_bytes},
      {"summary_bytes_per_entry", res.summary_bytes > 0 ? nlohmann::json(res.summary_bytes) : nlohmann::json(nullptr)},
      {"full_f16_kv_bytes_mean", res.full_kv_bytes_mean},
      {"build_seconds", res.library_seconds}};
  if (served_ran) {
    std::vector<double> c2, s2;
    for (const auto* r : all) {
      c2.push_back(r->cold_token2_s * 1e3);
      s2.push_back(r->served_token2_s * 1e3);
    }
    s["token2_ms_median"] = {{"cold", quantile(c2, 0.5)}, {"served", quantile(s2, 0.5)}};
  }
  for (const auto& method : res.methods) {
    s["methods"][method]["all"] = method_stats(all, method, q);
    s["methods"][method]["high_similarity"] = method_stats(high, method, q);
    s["methods"][method]["hits"] = method_stats(hits, method, q);
    s["methods"][method]["paraphrase"] = method_stats(paraphrase, method, q);
    s["methods"][method]["adversarial"] = method_stats(adversarial, method, q);
  }
  // The draft's criteria, per projector form, on the high-similarity set.
  for (const auto& method : res.methods) {
    if (method.rfind("projected:", 0) != 0) continue;
    const auto st = method_stats(high, method, q);
    const bool any = st["n"].get<size_t>() > 0;
    const double red = st["ttft_reduction_mean"], kl = st["kl_method_cold"]["mean"], agr = st["first_tokens_agreement"];
    auto verdict = [&](bool ok) { return !any ? "untested (no high-similarity requests)" : ok ? "supported" : "falsified"; };
    s["criteria"][method] = {
        {"ttft_reduction_gt_40pct", {{"value", red}, {"verdict", verdict(red > 0.40)}}},
        {"mean_kl_le_0.05", {{"value", kl}, {"verdict", verdict(kl <= 0.05)}}}};
    if (st.contains("accuracy_drop_vs_cold")) {
      // Task quality: the drop in answer accuracy against cold, with its paired 95% interval.
      const auto& d = st["accuracy_drop_vs_cold"];
      s["criteria"][method]["quality_drop_le_1pct"] = {
          {"value", d["difference"]}, {"low", d["low"]}, {"high", d["high"]}, {"measure", "answer accuracy"},
          {"verdict", !any ? "untested (no high-similarity requests)"
                           : drop_verdict(d["low"].get<double>(), d["high"].get<double>(), 0.01)}};
    } else {
      s["criteria"][method]["quality_drop_le_1pct"] = {
          {"value", 1.0 - agr}, {"measure", "greedy agreement with cold"}, {"verdict", verdict(1.0 - agr <= 0.01)}};
    }
  }
  // Hit rate and KL over tau (the first projector form: what `served` would serve at each threshold).
  std::string first_form;
  for (const auto& method : res.methods)
    if (method.rfind("projected:", 0) == 0) {
      first_form = method;
      break;
    }
  if (first_form.empty()) return s;  // no projected method was run (`--methods`): no sweep, no TTFT crossover
  for (double t : {0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99, 0.995, 0.999, 0.9995, 0.9999}) {
    std::vector<const RequestOutcome*> h;
    for (const auto* r : all)
      if (r->similarity >= t) h.push_back(r);
    const auto st = method_stats(h, first_form, q);
    s["tau_sweep"].push_back({{"tau", t}, {"hit_rate", all.empty() ? 0.0 : double(h.size()) / all.size()},
                              {"mean_kl", st["kl_method_cold"]["mean"]}, {"top1_agreement", st["top1_agreement"]}});
  }
  // TTFT against prompt length: median per length bin, cold and the first projector form; the crossover is the
  // shortest bin from which warm start is faster in every longer bin.
  const std::vector<int64_t> edges = {0, 64, 128, 192, 256, 320, 384, 448, 1 << 30};
  std::string crossover = "none: warm start is slower in the longest bin";
  std::vector<std::pair<int64_t, bool>> faster;
  for (size_t b = 0; b + 1 < edges.size(); ++b) {
    std::vector<double> c, w;
    for (const auto* r : all)
      if (r->target_tokens >= edges[b] && r->target_tokens < edges[b + 1]) {
        c.push_back(r->cold_ttft_s * 1e3);
        w.push_back(find(*r, first_form)->ttft_s * 1e3);
      }
    if (c.empty()) continue;
    const double cm = quantile(c, 0.5), wm = quantile(w, 0.5);
    s["ttft_by_length"].push_back({{"min_tokens", edges[b]}, {"n", c.size()}, {"cold_ms", cm}, {"warm_ms", wm}});
    faster.emplace_back(edges[b], wm < cm);
  }
  for (size_t i = faster.size(); i-- > 0;) {
    if (!faster[i].second) break;
    crossover = "warm start is faster from the " + std::to_string(faster[i].first) + "-token bin up";
  }
  s["crossover"] = crossover;
  return s;
}

std::string eval_plots_svg(const EvalResult& res, const std::string& heading) {
  using loadgen::Curve;
  using loadgen::LineChart;
  std::vector<LineChart> charts;
  std::vector<std::string> timed;
  for (const auto& m : res.methods)
    if (m.rfind("oracle-summary", 0) != 0) timed.push_back(m);
  {
    LineChart c{"Time to first token against prompt length", "prompt tokens", "TTFT (ms)", {}};
    Curve cold{"cold prefill", {}, true};
    for (const auto& r : res.requests) cold.points.push_back({double(r.target_tokens), r.cold_ttft_s * 1e3});
    std::sort(cold.points.begin(), cold.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
    c.curves.push_back(cold);
    for (const auto& m : timed) {
      Curve cv{m, {}, true};
      for (const auto& r : res.requests)
        for (const auto& o : r.methods)
          if (o.method == m) cv.points.push_back({double(r.target_tokens), o.ttft_s * 1e3});
      std::sort(cv.points.begin(), cv.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
      c.curves.push_back(cv);
    }
    charts.push_back(c);
  }
  {
    LineChart c{"KL(p_method || p_cold), empirical CDF", "KL (nats)", "fraction of requests", {}};
    for (const auto& m : res.methods) {
      if (m == "prefix-cache") continue;
      std::vector<double> v;
      for (const auto& r : res.requests)
        for (const auto& o : r.methods)
          if (o.method == m) v.push_back(o.kl_method_cold);
      c.curves.push_back({m, loadgen::cdf_points(v), false});
    }
    charts.push_back(c);
  }
  std::string first_form;
  for (const auto& m : res.methods)
    if (m.rfind("projected:", 0) == 0) {
      first_form = m;
      break;
    }
  if (!first_form.empty()) {
    LineChart c{"Hit rate and mean KL over the threshold tau (" + first_form + ")", "tau", "hit rate / mean KL", {}};
    Curve hr{"hit rate", {}, true}, kl{"mean KL over hits", {}, true};
    for (double t = 0.5; t <= 0.991; t += 0.01) {
      int n = 0;
      double k = 0;
      for (const auto& r : res.requests)
        if (r.similarity >= t)
          for (const auto& o : r.methods)
            if (o.method == first_form) {
              ++n;
              k += o.kl_method_cold;
            }
      hr.points.push_back({t, res.requests.empty() ? 0.0 : double(n) / res.requests.size()});
      if (n > 0) kl.points.push_back({t, k / n});
    }
    c.curves = {hr, kl};
    charts.push_back(c);
  }
  {
    LineChart c{"Compression error (oracle) against projection error, per request", "KL oracle-summary",
                "KL " + first_form, {}};
    Curve pts{"requests", {}, true};
    for (const auto& r : res.requests) {
      const MethodOutcome *a = nullptr, *b = nullptr;
      for (const auto& o : r.methods) {
        if (o.method == "oracle-summary") a = &o;
        if (o.method == first_form) b = &o;
      }
      if (a && b) pts.points.push_back({a->kl_method_cold, b->kl_method_cold});
    }
    std::sort(pts.points.begin(), pts.points.end(), [](auto& x, auto& y) { return x.x < y.x; });
    c.curves = {pts};
    charts.push_back(c);
  }
  return loadgen::render_svg(charts, heading, 2);
}

}  // namespace pagoda::warmstart
