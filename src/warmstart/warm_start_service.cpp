#include "warmstart/warm_start_service.h"

#include <chrono>
#include <cstdio>

#include "warmstart/prompt_embedding.h"
#include "warmstart/slot_forward.h"

namespace pagoda::warmstart {

Result<std::unique_ptr<WarmStartService>> WarmStartService::open(const Model& model, const WarmStartConfig& config) {
  if (!(config.threshold >= -1.0 && config.threshold <= 1.0))
    return make_error("--warm-start-threshold must be a cosine similarity in [-1, 1]");
  auto maps = load_maps(config.maps_path);
  if (!maps.ok()) return maps.error();
  PAGODA_RETURN_IF_ERROR(check_maps_fit_model(*maps, model.hparams()));
  auto library = WarmStartLibrary::load(config.library_dir, config.library_bytes);
  if (!library.ok()) return library.error();
  const ModelHParams& hp = model.hparams();
  for (int64_t i = 0; i < library->size(); ++i) {
    const LibraryEntry& e = library->entry(i);
    if (static_cast<int64_t>(e.embedding.size()) != hp.n_embd || e.summary.n_layer != hp.n_layer ||
        e.summary.n_kv_heads != hp.n_head_kv || e.summary.head_dim != hp.head_dim || e.summary.n_slots != maps->summary.m)
      return make_error("warm-start library " + config.library_dir + ": entry " + std::to_string(i) +
                        " does not match the model and maps (another model, or other summary settings)");
  }
  return std::unique_ptr<WarmStartService>(
      new WarmStartService(model, config, std::move(*maps), std::move(*library)));
}

Result<WarmStartDecision> WarmStartService::first_token(std::span<const int32_t> prompt, const SamplingParams& sampling,
                                                        ThreadPool& pool) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  std::lock_guard decision(decision_mu_);
  WarmStartDecision d;
  auto count = [&](bool hit) {
    std::lock_guard lock(stats_mu_);
    ++(hit ? stats_.hits : stats_.misses);
    stats_.search_s += d.search_s;
    stats_.projection_s += d.projection_s;
    stats_.forward_s += d.forward_s;
  };
  if (static_cast<int64_t>(prompt.size()) < maps_.summary.m + 1 || library_.size() == 0) {
    count(false);
    return d;
  }
  const auto t0 = Clock::now();
  const std::vector<float> embedding = embed_prompt(model_, prompt);
  const auto hit = library_.nearest(embedding);
  const auto t1 = Clock::now();
  d.search_s = seconds(t0, t1);
  d.similarity = hit ? hit->similarity : 0.0f;
  if (!hit || hit->similarity < config_.threshold) {
    count(false);
    return d;
  }
  const LibraryEntry& entry = library_.entry(hit->index);
  const std::vector<float> delta =
      maps_.projector.needs_target() ? embedding_difference(embedding, entry.embedding) : std::vector<float>{};
  auto projected = maps_.projector.apply(entry.summary, delta);
  if (!projected.ok()) return projected.error();
  const auto t2 = Clock::now();
  PAGODA_RETURN_IF_ERROR(slot_forward(model_, prompt.back(), *projected, pool, ws_, d.logits));
  const auto t3 = Clock::now();
  d.projection_s = seconds(t1, t2);
  d.forward_s = seconds(t2, t3);
  Sampler sampler(sampling);
  d.token = sampler.sample(d.logits, prompt, {});
  d.hit = true;
  count(true);
  return d;
}

WarmStartStats WarmStartService::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

std::string WarmStartService::describe() const {
  char line[256];
  std::snprintf(line, sizeof line, "warm start: %s projector, m=%lld slots, library %lld entries (%.1f MiB), tau %.3f",
                to_string(maps_.projector.form()).c_str(), static_cast<long long>(maps_.summary.m),
                static_cast<long long>(library_.size()), library_.bytes() / 1048576.0, config_.threshold);
  return line;
}

}  // namespace pagoda::warmstart
