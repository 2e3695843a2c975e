#include "model/convert.h"


#include "io/quantize.h"
#include "kernels/cpu/matmul.h"

namespace pagoda {
namespace {

// A type whose blocks tile a row of `cols`, falling back as llama.cpp does.
GgmlType fitting_type(GgmlType t, uint64_t cols) {
  while (cols % ggml_type_traits(t).block_elems != 0) {
    switch (t) {
      case GgmlType::Q4_K: t = GgmlType::Q5_0; break;
      case GgmlType::Q6_K: t = GgmlType::Q8_0; break;
      default: t = GgmlType::F16; break;
    }
  }
  return t;
}

}  // namespace

Result<GgufWriter> convert_to_gguf(const GgufFile& f, const std::string& dtype_name) {
  const bool q4_k_m = dtype_name == "q4_k_m" || dtype_name == "Q4_K_M";
  auto parsed = parse_ggml_type(q4_k_m ? "q4_k" : dtype_name);
  const bool writable = parsed && (*parsed == GgmlType::F32 || *parsed == GgmlType::F16 || *parsed == GgmlType::BF16 ||
                                   can_quantize(*parsed));
  if (!writable)
    return make_error("--dtype '" + dtype_name +
                      "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q6_k, q4_k_m");
  const GgmlType base = *parsed;
  auto arch = f.get_string("general.architecture");
  if (!arch.ok()) return arch.error();
  auto layers = f.get_uint(*arch + ".block_count");
  if (!layers.ok()) return layers.error();
  const int64_t n_layer = static_cast<int64_t>(*layers);

  GgufWriter w;
  for (const auto& [key, value] : f.metadata())
    if (key.rfind("pagoda.", 0) != 0) w.set(key, value);  // pagoda's own keys (the HF normalizer) stay out
  w.set_uint32("general.file_type", gguf_file_type(base, q4_k_m));
  if (base != GgmlType::F32 && base != GgmlType::F16 && base != GgmlType::BF16)
    w.set_uint32("general.quantization_version", 2);

  // llama.cpp's use_more_bits(layer, layers) of its Q4_K_M rule.
  auto more_bits = [&](int64_t i) { return i < n_layer / 8 || i >= 7 * n_layer / 8 || (i - n_layer / 8) % 3 == 2; };
  for (const GgufTensorInfo& t : f.tensors()) {
    const uint64_t cols = t.ne[0], rows = t.num_elements() / t.ne[0];
    GgmlType type = GgmlType::F32;
    if (t.n_dims >= 2 && t.name != "position_embd.weight") {
      type = base;
      if (q4_k_m) {
        int64_t layer = -1;
        if (t.name.rfind("blk.", 0) == 0) layer = std::stoll(t.name.substr(4));
        const bool widened = t.name.find("attn_v") != std::string::npos || t.name.find("ffn_down") != std::string::npos ||
                             t.name.find("attn_qkv") != std::string::npos;
        if (t.name == "output.weight" || (widened && layer >= 0 && more_bits(layer))) type = GgmlType::Q6_K;
      }
      type = fitting_type(type, cols);
    }
    // Source rows (F32, F16 or BF16) to f32, then to the target type.
    WeightMatrix src;
    src.data = t.data;
    src.type = t.type;
    src.cols = static_cast<int64_t>(cols);
    src.rows = static_cast<int64_t>(rows);
    src.row_bytes = ggml_row_bytes(ggml_type_traits(t.type), static_cast<int64_t>(cols));
    std::vector<float> values(cols * rows);
    for (uint64_t r = 0; r < rows; ++r) dequantize_row(src, static_cast<int64_t>(r), values.data() + r * cols);
    auto bytes = encode_f32_values(type, values);
    if (!bytes.ok()) return make_error("tensor '" + t.name + "': " + bytes.error().message);
    std::vector<uint64_t> ne(t.ne, t.ne + t.n_dims);
    w.add_tensor(t.name, type, std::move(ne), std::move(*bytes));
  }
  return w;
}

}  // namespace pagoda
