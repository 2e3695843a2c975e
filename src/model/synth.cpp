#include "model/synth.h"

#include <algorithm>
#include <cmath>

#include "io/quant_preset.h"
#include "io/quantize.h"
#include "util/rng.h"

namespace pagoda {
namespace {

// f32 values as `type` (synthesize_model checked the type and the shapes, so encoding cannot fail).
std::vector<uint8_t> encode(const std::vector<float>& values, GgmlType type) {
  auto bytes = encode_f32_values(type, values);
  return bytes.ok() ? std::move(*bytes) : std::vector<uint8_t>();
}

// Uniform values with the given standard deviation.
std::vector<float> random_values(Rng& rng, size_t n, float stddev) {
  std::vector<float> v(n);
  const double a = std::sqrt(3.0) * stddev;
  for (auto& x : v) x = static_cast<float>((rng.next_double() * 2.0 - 1.0) * a);
  return v;
}

}  // namespace

Result<GgufWriter> synthesize_model(const SynthOptions& o, const GgufFile& vocab) {
  const std::string& arch = o.arch;
  if (arch != "llama" && arch != "gpt2" && arch != "gptneox")
    return make_error("unsupported --arch '" + arch + "' (supported: llama, gpt2, gptneox)");
  const bool llama = arch == "llama";
  auto positive = [](int64_t v, const char* flag) -> Status {
    if (v <= 0 || v > (1 << 20)) return make_error(std::string(flag) + " must be between 1 and 1048576");
    return Status::success();
  };
  PAGODA_RETURN_IF_ERROR(positive(o.dim, "--dim"));
  PAGODA_RETURN_IF_ERROR(positive(o.layers, "--layers"));
  PAGODA_RETURN_IF_ERROR(positive(o.heads, "--heads"));
  PAGODA_RETURN_IF_ERROR(positive(o.kv_heads, "--kv-heads"));
  PAGODA_RETURN_IF_ERROR(positive(o.ffn, "--ffn"));
  PAGODA_RETURN_IF_ERROR(positive(o.context, "--context"));
  if (o.dim % o.heads != 0) return make_error("--dim must be a multiple of --heads");
  if (o.heads % o.kv_heads != 0) return make_error("--heads must be a multiple of --kv-heads");
  if ((o.dim / o.heads) % 2 != 0) return make_error("the head size (--dim / --heads) must be even");
  if (!llama && o.kv_heads != o.heads) return make_error("--kv-heads must equal --heads for " + arch);
  if (arch == "gptneox" && (o.dim / o.heads) % 8 != 0)
    return make_error("the head size (--dim / --heads) must be a multiple of 8 for gptneox (a quarter is rotated)");
  const auto preset = find_quant_preset(o.dtype);
  if (!preset) return make_error("--dtype '" + o.dtype + "' is not one of " + quant_preset_names());

  auto tokens = vocab.get_array("tokenizer.ggml.tokens", GgufValueType::STRING);
  if (!tokens.ok()) return make_error(vocab.source_name() + ": " + tokens.error().message);
  const int64_t n_vocab = static_cast<int64_t>((*tokens)->items.size());
  if (n_vocab == 0) return make_error(vocab.source_name() + ": the vocabulary is empty");

  const int64_t head_dim = o.dim / o.heads;
  const int64_t kv_dim = o.kv_heads * head_dim;
  GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_string("general.name", "pagoda-synth");
  w.set_uint32("general.file_type", preset->file_type);
  if (is_quantized_preset(*preset)) w.set_uint32("general.quantization_version", 2);
  w.set_uint32(arch + ".context_length", static_cast<uint32_t>(o.context));
  w.set_uint32(arch + ".embedding_length", static_cast<uint32_t>(o.dim));
  w.set_uint32(arch + ".block_count", static_cast<uint32_t>(o.layers));
  w.set_uint32(arch + ".feed_forward_length", static_cast<uint32_t>(o.ffn));
  w.set_uint32(arch + ".attention.head_count", static_cast<uint32_t>(o.heads));
  if (llama) {
    w.set_uint32("llama.attention.head_count_kv", static_cast<uint32_t>(o.kv_heads));
    w.set_uint32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
    w.set_float32("llama.rope.freq_base", 10000.0f);
    w.set_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_uint32("llama.vocab_size", static_cast<uint32_t>(n_vocab));
  } else {
    w.set_float32(arch + ".attention.layer_norm_epsilon", 1e-5f);
  }
  if (arch == "gptneox") {  // Pythia's shape: a quarter of each head rotated, parallel residual
    w.set_uint32("gptneox.rope.dimension_count", static_cast<uint32_t>(head_dim / 4));
    w.set_bool("gptneox.use_parallel_residual", true);
  }
  for (const auto& [key, value] : vocab.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);

  Rng rng(o.seed);
  const auto u64 = [](int64_t v) { return static_cast<uint64_t>(v); };
  QuantModelShape shape;
  shape.arch = arch;
  shape.n_layer = o.layers;
  shape.n_head = o.heads;
  shape.n_head_kv = o.kv_heads;
  // Each matrix's type: the preset's rule for quantizable tensors, F32 for the others (position_embd).
  auto add_matrix = [&](const std::string& name, int64_t cols, int64_t rows, float stddev) {
    const GgmlType t = is_quantized_preset(*preset) && !is_quantizable_tensor(name, 2)
                           ? GgmlType::F32
                           : quant_tensor_type(*preset, shape, name, u64(cols));
    w.add_tensor(name, t, {u64(cols), u64(rows)}, encode(random_values(rng, cols * rows, stddev), t));
  };
  auto add_norm = [&](const std::string& name) {
    w.add_tensor(name, GgmlType::F32, {u64(o.dim)}, encode(std::vector<float>(o.dim, 1.0f), GgmlType::F32));
  };
  // Projections into a sub-layer have unit gain (std 1/sqrt(fan_in)); projections back into the residual
  // stream are scaled down by sqrt(2 * layers) so the residual stays O(1) however deep the model is.
  const float in_std = 1.0f / std::sqrt(static_cast<float>(o.dim));
  const float depth = std::sqrt(2.0f * static_cast<float>(o.layers));
  auto add_zeros = [&](const std::string& name, int64_t n) {
    w.add_tensor(name, GgmlType::F32, {u64(n)}, encode(std::vector<float>(n, 0.0f), GgmlType::F32));
  };
  add_matrix("token_embd.weight", o.dim, n_vocab, 1.0f);
  if (arch == "gpt2") add_matrix("position_embd.weight", o.dim, o.context, 0.1f);
  add_norm("output_norm.weight");
  if (!llama) add_zeros("output_norm.bias", o.dim);
  add_matrix("output.weight", o.dim, n_vocab, in_std);
  for (int64_t i = 0; i < o.layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add_norm(p + "attn_norm.weight");
    add_norm(p + "ffn_norm.weight");
    if (llama) {
      add_matrix(p + "attn_q.weight", o.dim, o.dim, in_std);
      add_matrix(p + "attn_k.weight", o.dim, kv_dim, in_std);
      add_matrix(p + "attn_v.weight", o.dim, kv_dim, in_std);
      add_matrix(p + "attn_output.weight", o.dim, o.dim, in_std / depth);
      add_matrix(p + "ffn_gate.weight", o.dim, o.ffn, in_std);
      add_matrix(p + "ffn_up.weight", o.dim, o.ffn, in_std);
      add_matrix(p + "ffn_down.weight", o.ffn, o.dim, 1.0f / std::sqrt(static_cast<float>(o.ffn)) / depth);
      continue;
    }
    // GPT-2 / GPT-NeoX: LayerNorm with bias, a fused QKV projection, a GELU MLP, biases everywhere (zero).
    add_zeros(p + "attn_norm.bias", o.dim);
    add_zeros(p + "ffn_norm.bias", o.dim);
    add_matrix(p + "attn_qkv.weight", o.dim, o.dim + 2 * kv_dim, in_std);
    add_zeros(p + "attn_qkv.bias", o.dim + 2 * kv_dim);
    add_matrix(p + "attn_output.weight", o.dim, o.dim, in_std / depth);
    add_zeros(p + "attn_output.bias", o.dim);
    add_matrix(p + "ffn_up.weight", o.dim, o.ffn, in_std);
    add_zeros(p + "ffn_up.bias", o.ffn);
    add_matrix(p + "ffn_down.weight", o.ffn, o.dim, 1.0f / std::sqrt(static_cast<float>(o.ffn)) / depth);
    add_zeros(p + "ffn_down.bias", o.dim);
  }
  return w;
}

}  // namespace pagoda
