#include "model/convert.h"

#include "io/quant_preset.h"
#include "io/quantize.h"
#include "kernels/cpu/matmul.h"

namespace pagoda {

Result<GgufWriter> convert_to_gguf(const GgufFile& f, const std::string& dtype_name) {
  const auto preset = find_quant_preset(dtype_name);
  if (!preset) return make_error("--dtype '" + dtype_name + "' is not one of " + quant_preset_names());
  auto arch = f.get_string("general.architecture");
  if (!arch.ok()) return arch.error();
  QuantModelShape shape;
  shape.arch = *arch;
  auto count = [&](const char* key, int64_t fallback) -> int64_t {
    auto v = f.get_uint(*arch + key);
    return v.ok() ? static_cast<int64_t>(*v) : fallback;
  };
  auto layers = f.get_uint(*arch + ".block_count");
  if (!layers.ok()) return layers.error();
  shape.n_layer = static_cast<int64_t>(*layers);
  shape.n_head = count(".attention.head_count", 1);
  shape.n_head_kv = count(".attention.head_count_kv", shape.n_head);
  shape.n_expert = count(".expert_count", 0);
  shape.has_output = f.find_tensor("output.weight") != nullptr;

  GgufWriter w;
  for (const auto& [key, value] : f.metadata())
    if (key.rfind("pagoda.", 0) != 0) w.set(key, value);  // pagoda's own keys (the HF normalizer) stay out
  w.set_uint32("general.file_type", preset->file_type);
  if (is_quantized_preset(*preset)) w.set_uint32("general.quantization_version", 2);

  for (const GgufTensorInfo& t : f.tensors()) {
    const uint64_t cols = t.ne[0], rows = t.num_elements() / t.ne[0];
    // Vectors, position embeddings and other tensors llama-quantize leaves alone stay F32 (matrices take a float
    // preset's type).
    GgmlType type = GgmlType::F32;
    if (t.n_dims >= 2 && t.name != "position_embd.weight" &&
        (!is_quantized_preset(*preset) || is_quantizable_tensor(t.name, t.n_dims)))
      type = quant_tensor_type(*preset, shape, t.name, cols);
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
