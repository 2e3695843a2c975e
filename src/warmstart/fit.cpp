#include "warmstart/fit.h"

#include <chrono>

#include "warmstart/kv_summary.h"
#include "warmstart/prompt_embedding.h"
#include "warmstart/prompt_state.h"

namespace pagoda::warmstart {

Result<WarmStartMaps> fit_maps(const Model& model, const std::vector<TextPair>& pairs, const FitOptions& o,
                               FitReport& report, const std::function<void(int64_t, int64_t)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  ThreadPool pool(o.threads);
  TransformerWorkspace ws;
  std::vector<SlotCache> sources, targets;
  std::vector<std::vector<float>> deltas;  // e_target - e_source, per pair used
  auto summarize = [&](const std::vector<int32_t>& tokens) -> Result<SlotCache> {
    auto state = run_prompt(model, tokens, pool, ws);
    if (!state.ok()) return state.error();
    return summarize_prefix(model.hparams(), *state, o.summary);
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto source = model.tokenizer().encode(pairs[i].source, true);
    const auto target = model.tokenizer().encode(pairs[i].target, true);
    auto s = summarize(source);
    auto t = s.ok() ? summarize(target) : Result<SlotCache>(s.error());
    if (s.ok() && t.ok()) {
      deltas.push_back(embedding_difference(embed_prompt(model, target), embed_prompt(model, source)));
      sources.push_back(std::move(*s));
      targets.push_back(std::move(*t));
      ++report.pairs_used;
    } else {
      const std::string why = s.ok() ? t.error().message : s.error().message;
      if (why.find("too short") == std::string::npos) return make_error(why);
      ++report.pairs_skipped;
    }
    if (progress) progress(static_cast<int64_t>(i + 1), static_cast<int64_t>(pairs.size()));
  }
  std::vector<std::pair<const SlotCache*, const SlotCache*>> refs;
  for (size_t i = 0; i < sources.size(); ++i) refs.emplace_back(&sources[i], &targets[i]);
  WarmStartMaps maps;
  maps.summary = o.summary;
  maps.gamma = o.gamma;
  if (refs.empty()) return make_error("warm start: no training pair is long enough for " + std::to_string(o.summary.m) + " slots");
  auto p = fit_projector(o.form, refs, o.gamma, deltas, o.target_features);
  if (!p.ok()) return p.error();
  maps.projector = std::move(*p);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return maps;
}

}  // namespace pagoda::warmstart
