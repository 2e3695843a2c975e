#include "warmstart/warm_start_maps.h"

#include <cstring>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "util/result.h"

namespace pagoda::warmstart {

namespace {
constexpr const char* kFormat = "pagoda-warmstart-maps-1";

Result<int64_t> meta_int(const std::map<std::string, std::string>& meta, const std::string& key, int64_t lo, int64_t hi) {
  auto it = meta.find(key);
  if (it == meta.end()) return make_error("metadata '" + key + "' is missing");
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used != it->second.size() || v < lo || v > hi) throw std::out_of_range(key);
    return static_cast<int64_t>(v);
  } catch (const std::exception&) {
    return make_error("metadata '" + key + "' = '" + it->second + "' is not an integer in [" + std::to_string(lo) +
                      ", " + std::to_string(hi) + "]");
  }
}

Result<double> meta_double(const std::map<std::string, std::string>& meta, const std::string& key) {
  auto it = meta.find(key);
  if (it == meta.end()) return make_error("metadata '" + key + "' is missing");
  try {
    size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used != it->second.size() || !(v >= 0) || v > 1e30) throw std::out_of_range(key);
    return v;
  } catch (const std::exception&) {
    return make_error("metadata '" + key + "' = '" + it->second + "' is not a non-negative number");
  }
}
}  // namespace

Status save_maps(const std::string& path, const WarmStartMaps& maps) {
  const Projector& p = maps.projector;
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"form", to_string(p.form())},
      {"m", std::to_string(maps.summary.m)},
      {"ref_positions", std::to_string(maps.summary.ref_positions)},
      {"value_ridge", std::to_string(maps.summary.value_ridge)},
      {"gamma", std::to_string(maps.gamma)},
      {"n_layer", std::to_string(p.n_layer())},
      {"n_kv_heads", std::to_string(p.n_kv_heads())},
      {"head_dim", std::to_string(p.head_dim())}};
  std::vector<SafetensorsF32> tensors;
  if (p.params_per_head() > 0)
    tensors.push_back({"projector", {uint64_t(p.n_layer()), uint64_t(p.n_kv_heads()), uint64_t(p.params_per_head())},
                       p.weights()});
  if (p.needs_target()) {
    meta["target_features"] = std::to_string(p.target_features());
    meta["embedding_dim"] = std::to_string(p.embedding_dim());
    tensors.push_back({"target_basis", {uint64_t(p.target_features()), uint64_t(p.embedding_dim())}, p.target_basis()});
  }
  return write_safetensors_f32(path, tensors, meta);
}

Result<WarmStartMaps> load_maps(const std::string& path) {
  auto file = SafetensorsFile::open(path);
  if (!file.ok()) return make_error("warm-start maps: " + file.error().message);
  return maps_from_safetensors(*file, path);
}

Result<WarmStartMaps> maps_from_safetensors(const SafetensorsFile& file, const std::string& path) {
  const auto& meta = file.metadata();
  auto fail = [&](const std::string& why) -> Error { return make_error("warm-start maps: " + path + ": " + why); };
  auto fmt = meta.find("format");
  if (fmt == meta.end() || fmt->second != kFormat) return fail("not a pagoda warm-start maps file");
  auto form_it = meta.find("form");
  if (form_it == meta.end()) return fail("metadata 'form' is missing");
  auto form = parse_projector_form(form_it->second);
  if (!form.ok()) return fail(form.error().message);
  auto m = meta_int(meta, "m", 1, 4096);
  auto R = meta_int(meta, "ref_positions", 1, 1 << 20);
  auto L = meta_int(meta, "n_layer", 1, 4096);
  auto H = meta_int(meta, "n_kv_heads", 1, 4096);
  auto d = meta_int(meta, "head_dim", 1, 4096);
  auto ridge = meta_double(meta, "value_ridge");
  auto gamma = meta_double(meta, "gamma");
  for (const Status& s : {m.ok() ? Status::success() : Status(m.error()), R.ok() ? Status::success() : Status(R.error()),
                          L.ok() ? Status::success() : Status(L.error()), H.ok() ? Status::success() : Status(H.error()),
                          d.ok() ? Status::success() : Status(d.error()),
                          ridge.ok() ? Status::success() : Status(ridge.error()),
                          gamma.ok() ? Status::success() : Status(gamma.error())})
    if (!s.ok()) return fail(s.error().message);
  WarmStartMaps maps;
  maps.summary.m = *m;
  maps.summary.ref_positions = *R;
  maps.summary.value_ridge = *ridge;
  maps.gamma = *gamma;
  int64_t k = 0, embd = 0;
  const SafetensorsTensor* basis = file.find("target_basis");
  if (*form == ProjectorForm::kTargetAware) {
    auto kk = meta_int(meta, "target_features", 1, 4096);
    auto ee = meta_int(meta, "embedding_dim", 1, 1 << 20);
    if (!kk.ok()) return fail(kk.error().message);
    if (!ee.ok()) return fail(ee.error().message);
    k = *kk;
    embd = *ee;
    if (basis == nullptr) return fail("the 'target_basis' tensor is missing");
    if (basis->type != GgmlType::F32 || basis->shape != std::vector<uint64_t>{uint64_t(k), uint64_t(embd)})
      return fail("the 'target_basis' tensor has the wrong type or shape for the metadata");
  } else if (basis != nullptr) {
    return fail("only a target-aware projector has a 'target_basis' tensor");
  }
  // The weights' shape is checked against the file before anything is allocated (the metadata is untrusted).
  const int64_t per_head = Projector(*form, 0, 0, *d, *m, k, embd).params_per_head();
  const SafetensorsTensor* w = file.find("projector");
  if (per_head > 0) {
    if (w == nullptr) return fail("the 'projector' tensor is missing");
    if (w->type != GgmlType::F32 ||
        w->shape != std::vector<uint64_t>{uint64_t(*L), uint64_t(*H), uint64_t(per_head)})
      return fail("the 'projector' tensor has the wrong type or shape for the metadata");
  }
  maps.projector = Projector(*form, *L, *H, *d, *m, k, embd);
  if (basis != nullptr) std::memcpy(maps.projector.target_basis().data(), basis->data, static_cast<size_t>(k * embd) * 4);
  if (per_head > 0) {
    std::memcpy(maps.projector.weights().data(), w->data, maps.projector.param_count() * 4);  // any alignment
  } else if (w != nullptr) {
    return fail("an identity projector has no weights, but the file holds some");
  }
  return maps;
}

Status check_maps_fit_model(const WarmStartMaps& maps, const ModelHParams& hp) {
  const Projector& p = maps.projector;
  if (p.n_layer() != hp.n_layer || p.n_kv_heads() != hp.n_head_kv || p.head_dim() != hp.head_dim)
    return make_error("warm-start maps were fitted for " + std::to_string(p.n_layer()) + " layers x " +
                      std::to_string(p.n_kv_heads()) + " KV heads x " + std::to_string(p.head_dim()) +
                      " dims, the model has " + std::to_string(hp.n_layer) + " x " + std::to_string(hp.n_head_kv) +
                      " x " + std::to_string(hp.head_dim));
  if (p.needs_target() && p.embedding_dim() != hp.n_embd)
    return make_error("warm-start maps read embeddings of width " + std::to_string(p.embedding_dim()) +
                      ", the model's are " + std::to_string(hp.n_embd));
  return Status::success();
}

}  // namespace pagoda::warmstart
