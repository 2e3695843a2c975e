#include "io/quant_preset.h"

#include <cctype>
#include <cstdlib>
#include <iterator>

namespace pagoda {
namespace {

// llama_ftype numbers of the mixes the rules name.
enum FileType : uint32_t {
  kQ8_0 = 7,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
};

constexpr QuantPreset kPresets[] = {
    {"f32", GgmlType::F32, 0, false},        {"f16", GgmlType::F16, 1, false},
    {"bf16", GgmlType::BF16, 32, false},     {"q4_0", GgmlType::Q4_0, 2, true},
    {"q4_1", GgmlType::Q4_1, 3, true},       {"q5_0", GgmlType::Q5_0, 8, true},
    {"q5_1", GgmlType::Q5_1, 9, true},       {"q8_0", GgmlType::Q8_0, kQ8_0, true},
    {"q2_k", GgmlType::Q2_K, kQ2_K, true},   {"q3_k_s", GgmlType::Q3_K, kQ3_K_S, true},
    {"q3_k_m", GgmlType::Q3_K, kQ3_K_M, true}, {"q3_k_l", GgmlType::Q3_K, kQ3_K_L, true},
    {"q4_k_s", GgmlType::Q4_K, kQ4_K_S, true}, {"q4_k_m", GgmlType::Q4_K, kQ4_K_M, true},
    {"q5_k_s", GgmlType::Q5_K, kQ5_K_S, true}, {"q5_k_m", GgmlType::Q5_K, kQ5_K_M, true},
    {"q6_k", GgmlType::Q6_K, 18, true},      {"iq4_nl", GgmlType::IQ4_NL, kIQ4_NL, true},
    {"iq4_xs", GgmlType::IQ4_XS, kIQ4_XS, true},
    // Every quantized tensor one K type (llama-quantize --pure), general.file_type of its _S preset.
    {"q3_k", GgmlType::Q3_K, kQ3_K_S, false}, {"q4_k", GgmlType::Q4_K, kQ4_K_S, false},
    {"q5_k", GgmlType::Q5_K, kQ5_K_S, false},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The layer of a "blk.N...." tensor (0 for others).
int64_t layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return 0;
  return std::strtoll(name.c_str() + 4, nullptr, 10);
}

// llama.cpp's use_more_bits(i_layer, n_layers).
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// llama_tensor_get_type_impl's choice for the mix, before the row-length fallback.
GgmlType mixed_type(uint32_t ft, GgmlType type, const QuantModelShape& m, const std::string& name,
                    uint64_t row_length) {
  const bool falcon = m.arch == "falcon";
  const int64_t gqa = m.n_head_kv > 0 ? m.n_head / m.n_head_kv : 1;
  const int64_t i = layer_of(name), n = m.n_layer;
  const bool is_output = name == "output.weight" || (!m.has_output && name == "token_embd.weight");
  if (is_output) {
    if (falcon || row_length % ggml_type_traits(type).block_elems != 0) return GgmlType::Q8_0;
    return type != GgmlType::Q8_0 ? GgmlType::Q6_K : type;
  }
  if (name == "token_embd.weight") return type;  // only the IQ1/IQ2/IQ3 mixes (not offered) change it
  if (contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight") || contains(name, "attn_kv_b.weight")) {
    if (ft == kQ2_K)
      type = gqa >= 4 ? GgmlType::Q4_K : GgmlType::Q3_K;
    else if (ft == kQ3_K_M)
      type = i < 2 ? GgmlType::Q5_K : GgmlType::Q4_K;
    else if (ft == kQ3_K_L)
      type = GgmlType::Q5_K;
    else if ((ft == kIQ4_NL || ft == kIQ4_XS) && gqa >= 4)
      type = GgmlType::Q5_K;
    else if ((ft == kQ4_K_M || ft == kQ5_K_M) && use_more_bits(i, n))
      type = GgmlType::Q6_K;
    else if (ft == kQ4_K_S && i < 4)
      type = GgmlType::Q5_K;
    if (m.n_expert == 8) type = GgmlType::Q8_0;
    return type;
  }
  if (contains(name, "attn_k.weight")) return m.n_expert == 8 ? GgmlType::Q8_0 : type;
  if (contains(name, "ffn_down")) {
    if (ft == kQ2_K) return GgmlType::Q3_K;
    if (ft == kQ3_K_M)
      return i < n / 16 ? GgmlType::Q5_K : !falcon || use_more_bits(i, n) ? GgmlType::Q4_K : GgmlType::Q3_K;
    if (ft == kQ3_K_L) return falcon ? GgmlType::Q4_K : GgmlType::Q5_K;
    if (ft == kQ4_K_M) {
      if (falcon) return i < n / 16 ? GgmlType::Q6_K : use_more_bits(i, n) ? GgmlType::Q5_K : GgmlType::Q4_K;
      return use_more_bits(i, n) ? GgmlType::Q6_K : type;
    }
    if (i < n / 8 && (ft == kIQ4_NL || ft == kIQ4_XS)) return GgmlType::Q5_K;
    if (ft == kQ5_K_M && use_more_bits(i, n)) return GgmlType::Q6_K;
    if (ft == kQ4_K_S && !falcon && i < n / 8) return GgmlType::Q5_K;
    return type;
  }
  if (contains(name, "attn_output.weight")) {
    if (falcon) return ft == kQ3_K_L ? GgmlType::Q4_K : type;
    if (m.n_expert == 8) {
      const bool up = ft == kQ2_K || ft == kQ3_K_S || ft == kQ3_K_M || ft == kIQ4_NL || ft == kQ4_K_S ||
                      ft == kQ4_K_M || ft == kIQ4_XS;
      return up ? GgmlType::Q5_K : type;
    }
    if (ft == kQ2_K) return GgmlType::Q3_K;
    if (ft == kQ3_K_M) return GgmlType::Q4_K;
    if (ft == kQ3_K_L) return GgmlType::Q5_K;
  }
  return type;
}

}  // namespace

std::optional<QuantPreset> find_quant_preset(const std::string& name) {
  const std::string key = lower(name);
  for (const QuantPreset& p : kPresets)
    if (key == p.name) return p;
  return std::nullopt;
}

std::string quant_preset_names() {
  std::string out;
  for (const QuantPreset& p : kPresets) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

bool is_quantized_preset(const QuantPreset& p) {
  return p.base != GgmlType::F32 && p.base != GgmlType::F16 && p.base != GgmlType::BF16;
}

bool is_quantizable_tensor(const std::string& name, uint32_t n_dims) {
  const std::string suffix = "weight";
  if (n_dims < 2 || name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  return !contains(name, "_norm.weight") && name != "position_embd.weight" && !contains(name, "ffn_gate_inp.weight");
}

GgmlType fallback_type(GgmlType type, uint64_t row_length) {
  if (row_length % ggml_type_traits(type).block_elems == 0) return type;
  GgmlType next = GgmlType::F16;
  switch (type) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K: next = GgmlType::Q4_0; break;
    case GgmlType::IQ4_XS: next = GgmlType::IQ4_NL; break;
    case GgmlType::Q4_K: next = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: next = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: next = GgmlType::Q8_0; break;
    default: break;
  }
  return row_length % ggml_type_traits(next).block_elems == 0 ? next : GgmlType::F16;
}

GgmlType quant_tensor_type(const QuantPreset& p, const QuantModelShape& m, const std::string& name,
                           uint64_t row_length) {
  if (!is_quantized_preset(p)) return p.base;
  const GgmlType chosen = p.mix ? mixed_type(p.file_type, p.base, m, name, row_length) : p.base;
  return fallback_type(chosen, row_length);
}

}  // namespace pagoda
