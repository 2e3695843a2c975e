#include "model/hparams.h"

#include <algorithm>
#include <cmath>

namespace pagoda {
namespace {

constexpr uint64_t kMaxDim = 1 << 20;
constexpr uint64_t kMaxLayers = 1024;

Result<int64_t> read_dim(const GgufFile& f, const std::string& key, uint64_t max) {
  auto v = f.get_uint(key);
  if (!v.ok()) return v.error();
  if (*v == 0 || *v > max) return make_error("metadata key '" + key + "' = " + std::to_string(*v) + " is out of range");
  return static_cast<int64_t>(*v);
}

}  // namespace

bool is_supported_architecture(const std::string& arch) { return find_arch(arch) != nullptr; }

Result<ModelHParams> read_hparams(const GgufFile& f) {
  ModelHParams hp;
  auto arch = f.get_string("general.architecture");
  if (!arch.ok()) return arch.error();
  hp.arch = *arch;
  hp.spec = find_arch(hp.arch);
  if (hp.spec == nullptr)
    return make_error("unsupported architecture '" + hp.arch + "' (supported: " + supported_arch_names() + ")");
  const ArchSpec& spec = *hp.spec;
  auto name = f.get_string_opt("general.name");
  if (!name.ok()) return name.error();
  hp.name = name->value_or("");
  const std::string a = hp.arch + ".";

#define PAGODA_READ_DIM(field, key, max) \
  {                                      \
    auto r = read_dim(f, a + key, max);  \
    if (!r.ok()) return r.error();       \
    hp.field = *r;                       \
  }
  PAGODA_READ_DIM(n_ctx_train, "context_length", uint64_t{1} << 24);
  PAGODA_READ_DIM(n_embd, "embedding_length", kMaxDim);
  PAGODA_READ_DIM(n_layer, "block_count", kMaxLayers);
  PAGODA_READ_DIM(n_ff, "feed_forward_length", kMaxDim);
  PAGODA_READ_DIM(n_head, "attention.head_count", kMaxDim);
#undef PAGODA_READ_DIM

  hp.n_head_kv = hp.n_head;
  if (f.has(a + "attention.head_count_kv")) {
    auto r = read_dim(f, a + "attention.head_count_kv", kMaxDim);
    if (!r.ok()) return r.error();
    hp.n_head_kv = *r;
  }
  if (hp.n_head % hp.n_head_kv != 0)
    return make_error("attention.head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                      std::to_string(hp.n_head_kv));
  if (f.has(a + "attention.key_length")) {
    auto r = read_dim(f, a + "attention.key_length", kMaxDim);
    if (!r.ok()) return r.error();
    hp.head_dim = *r;
  } else {
    if (hp.n_embd % hp.n_head != 0) return make_error("embedding_length is not a multiple of attention.head_count");
    hp.head_dim = hp.n_embd / hp.n_head;
  }

  const std::string eps_key =
      spec.norm == NormKind::kRms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon";
  auto eps = f.get_float_opt(a + eps_key);
  if (!eps.ok()) return eps.error();
  hp.norm_eps = static_cast<float>(eps->value_or(1e-5));
  if (!(hp.norm_eps >= 0.0f && hp.norm_eps < 1.0f)) return make_error(eps_key + " is out of range");

  hp.parallel_residual = spec.parallel_residual;
  auto parallel = f.get_bool_opt(a + "use_parallel_residual");
  if (!parallel.ok()) return parallel.error();
  if (parallel->has_value()) hp.parallel_residual = **parallel;
  hp.gelu = spec.gelu;

  // pagoda attends over the whole context; a model trained with a sliding window is exact up to the window's
  // length, so the context is capped there rather than silently diverging beyond it.
  auto window = f.get_uint_opt(a + "attention.sliding_window");
  if (!window.ok()) return window.error();
  hp.sliding_window = static_cast<int64_t>(std::min<uint64_t>(window->value_or(0), uint64_t{1} << 24));
  if (hp.sliding_window > 0 && hp.sliding_window < hp.n_ctx_train) hp.n_ctx_train = hp.sliding_window;
  for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight", "rope_freqs.weight"})
    if (f.find_tensor(t))
      return make_error(std::string("tensor '") + t +
                        "': per-frequency rope factors (long-rope / llama-3 rope scaling) are not supported");

  hp.rope.type = spec.rope;
  auto base = f.get_float_opt(a + "rope.freq_base");
  if (!base.ok()) return base.error();
  hp.rope.freq_base = static_cast<float>(base->value_or(10000.0));
  if (!(hp.rope.freq_base > 0.0f)) return make_error("rope.freq_base must be positive");
  hp.rope.n_rot = hp.head_dim;
  if (f.has(a + "rope.dimension_count")) {
    auto r = read_dim(f, a + "rope.dimension_count", kMaxDim);
    if (!r.ok()) return r.error();
    hp.rope.n_rot = *r;
  }
  if (hp.rope.n_rot > hp.head_dim || hp.rope.n_rot % 2 != 0)
    return make_error("rope.dimension_count " + std::to_string(hp.rope.n_rot) +
                      " must be even and at most the head size");
  // As llama.cpp: the scaling type defaults to linear; the factor comes from rope.scaling.factor or the legacy
  // rope.scale_linear; no factor (or 0) means no scaling.
  auto scaling = f.get_string_opt(a + "rope.scaling.type");
  if (!scaling.ok()) return scaling.error();
  const std::string scaling_type = scaling->value_or("linear");
  if (scaling_type != "none" && scaling_type != "linear")
    return make_error("unsupported rope.scaling.type '" + scaling_type + "' (supported: none, linear)");
  auto factor = f.get_float_opt(a + "rope.scaling.factor");
  if (!factor.ok()) return factor.error();
  if (!factor->has_value()) {
    factor = f.get_float_opt(a + "rope.scale_linear");
    if (!factor.ok()) return factor.error();
  }
  const double scale = factor->value_or(0.0);
  if (!(scale >= 0.0) || !std::isfinite(scale))
    return make_error("rope scaling factor must be a finite non-negative number");
  if (scaling_type == "linear" && scale != 0.0 && scale != 1.0) hp.rope.freq_scale = static_cast<float>(1.0 / scale);

  // The attention widths must stay sane even when each factor is in range.
  if (hp.q_dim() > (int64_t{1} << 20) || hp.kv_dim() > (int64_t{1} << 20))
    return make_error("attention width (heads x head size) exceeds 1048576");
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) return make_error("tensor 'token_embd.weight' is missing");
  hp.n_vocab = static_cast<int64_t>(embd->ne[1]);
  return hp;
}

}  // namespace pagoda
