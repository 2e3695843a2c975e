// llama-quantize's presets: every tensor type llama-quantize (da46e59, no importance matrix) chose in the files of
// ../shared/models/quant (listed in tensor_types.json) is the type quant_tensor_type picks, and general.file_type
// matches; the rules those files do not reach (grouped-query attention, deeper models, tied embeddings, row-length
// fallbacks) follow llama.cpp's source.
#include "io/quant_preset.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "io/gguf_file.h"

namespace pagoda {
namespace {

const std::string kQuantDir = std::string(PAGODA_SHARED_DIR) + "/models/quant/";

// "synth-q-Q4_K_M.gguf" -> "Q4_K_M".
std::string preset_of_file(const std::string& file) {
  const size_t dash = file.rfind('-'), dot = file.rfind('.');
  return file.substr(dash + 1, dot - dash - 1);
}

TEST(QuantPreset, ReproducesEveryTypeLlamaQuantizeChose) {
  std::ifstream in(kQuantDir + "tensor_types.json");
  ASSERT_TRUE(in) << "missing " << kQuantDir << "tensor_types.json";
  const auto files = nlohmann::json::parse(in);
  int checked_files = 0, checked_tensors = 0, fallbacks = 0;
  for (const auto& [file, info] : files.items()) {
    SCOPED_TRACE(file);
    const auto preset = find_quant_preset(preset_of_file(file));
    ASSERT_TRUE(preset) << preset_of_file(file);
    EXPECT_EQ(preset->file_type, info["file_type"].get<uint32_t>());
    auto gguf = GgufFile::open(kQuantDir + file);
    ASSERT_TRUE(gguf.ok()) << gguf.error().message;
    QuantModelShape shape;
    shape.arch = *gguf->get_string("general.architecture");
    shape.n_layer = static_cast<int64_t>(*gguf->get_uint(shape.arch + ".block_count"));
    shape.n_head = static_cast<int64_t>(*gguf->get_uint(shape.arch + ".attention.head_count"));
    shape.n_head_kv = static_cast<int64_t>(*gguf->get_uint(shape.arch + ".attention.head_count_kv"));
    shape.has_output = info["tensors"].contains("output.weight");
    for (const auto& [name, tensor] : info["tensors"].items()) {
      const auto ne = tensor["ne"].get<std::vector<uint64_t>>();
      const auto expected = parse_ggml_type(tensor["type"].get<std::string>());
      ASSERT_TRUE(expected) << tensor["type"];
      // stories260K's ffn_down rows of 172 fit no quantized block: F16 (for Q4_0 and Q8_0 llama-quantize was told
      // so by --tensor-type ffn_down=f16, as it refuses otherwise; pagoda falls back to F16 by itself).
      const GgmlType got = is_quantizable_tensor(name, static_cast<uint32_t>(ne.size()))
                               ? quant_tensor_type(*preset, shape, name, ne[0])
                               : GgmlType::F32;
      EXPECT_EQ(ggml_type_traits(got).name, std::string(ggml_type_traits(*expected).name)) << name;
      fallbacks += got != preset->base && ne[0] % 256 != 0;
      ++checked_tensors;
    }
    ++checked_files;
  }
  EXPECT_EQ(checked_files, 17);
  EXPECT_GT(checked_tensors, 400);
  EXPECT_GT(fallbacks, 0);  // the stories260K files exercise the row-length fallbacks
}

TEST(QuantPreset, NamesAreCaseInsensitiveAndListed) {
  ASSERT_TRUE(find_quant_preset("Q4_K_M"));
  EXPECT_EQ(find_quant_preset("q4_k_m")->file_type, 15u);
  EXPECT_EQ(find_quant_preset("IQ4_xs")->base, GgmlType::IQ4_XS);
  EXPECT_FALSE(find_quant_preset("q3"));
  EXPECT_FALSE(find_quant_preset("iq2_xxs"));
  const std::string names = quant_preset_names();
  for (const char* n : {"f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k_s", "q3_k_m",
                        "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs", "q3_k", "q4_k",
                        "q5_k"}) {
    EXPECT_TRUE(find_quant_preset(n)) << n;
    EXPECT_NE(names.find(n), std::string::npos) << n;
  }
}

TEST(QuantPreset, RowsNotTiledByABlockFallBackAsLlamaQuantize) {
  EXPECT_EQ(fallback_type(GgmlType::Q2_K, 512), GgmlType::Q2_K);
  EXPECT_EQ(fallback_type(GgmlType::Q2_K, 64), GgmlType::Q4_0);
  EXPECT_EQ(fallback_type(GgmlType::Q3_K, 96), GgmlType::Q4_0);
  EXPECT_EQ(fallback_type(GgmlType::IQ4_XS, 64), GgmlType::IQ4_NL);
  EXPECT_EQ(fallback_type(GgmlType::Q4_K, 64), GgmlType::Q5_0);
  EXPECT_EQ(fallback_type(GgmlType::Q5_K, 64), GgmlType::Q5_1);
  EXPECT_EQ(fallback_type(GgmlType::Q6_K, 64), GgmlType::Q8_0);
  EXPECT_EQ(fallback_type(GgmlType::Q6_K, 172), GgmlType::F16);
  EXPECT_EQ(fallback_type(GgmlType::Q4_0, 48), GgmlType::F16);
  EXPECT_EQ(fallback_type(GgmlType::IQ4_NL, 32), GgmlType::IQ4_NL);
}

TEST(QuantPreset, RulesTheFilesDoNotReach) {
  QuantModelShape m;
  m.n_layer = 32;
  m.n_head = 32;
  m.n_head_kv = 8;  // grouped-query factor 4
  const auto q2_k = *find_quant_preset("q2_k");
  EXPECT_EQ(quant_tensor_type(q2_k, m, "blk.3.attn_v.weight", 4096), GgmlType::Q4_K);
  EXPECT_EQ(quant_tensor_type(*find_quant_preset("iq4_xs"), m, "blk.3.attn_v.weight", 4096), GgmlType::Q5_K);
  // Q3_K_M: ffn_down Q5_K in the first 32/16 layers, Q4_K after; attn_v Q5_K in the first two layers.
  const auto q3_k_m = *find_quant_preset("q3_k_m");
  EXPECT_EQ(quant_tensor_type(q3_k_m, m, "blk.1.ffn_down.weight", 11008 + 256), GgmlType::Q5_K);
  EXPECT_EQ(quant_tensor_type(q3_k_m, m, "blk.2.ffn_down.weight", 11264), GgmlType::Q4_K);
  EXPECT_EQ(quant_tensor_type(q3_k_m, m, "blk.2.attn_v.weight", 4096), GgmlType::Q4_K);
  // Q4_K_M: use_more_bits(i, 32) is true for layers 0..3, 28..31 and every third between (6, 9, ...).
  const auto q4_k_m = *find_quant_preset("q4_k_m");
  for (int i : {0, 3, 6, 9, 27, 28, 31})
    EXPECT_EQ(quant_tensor_type(q4_k_m, m, "blk." + std::to_string(i) + ".ffn_down.weight", 4096), GgmlType::Q6_K) << i;
  for (int i : {4, 5, 7, 26})
    EXPECT_EQ(quant_tensor_type(q4_k_m, m, "blk." + std::to_string(i) + ".attn_v.weight", 4096), GgmlType::Q4_K) << i;
  // Q4_K_S: ffn_down Q5_K in the first eighth; Q3_K_L: attn_output Q5_K.
  EXPECT_EQ(quant_tensor_type(*find_quant_preset("q4_k_s"), m, "blk.3.ffn_down.weight", 4096), GgmlType::Q5_K);
  EXPECT_EQ(quant_tensor_type(*find_quant_preset("q3_k_l"), m, "blk.9.attn_output.weight", 4096), GgmlType::Q5_K);
  // Tied embeddings: token_embd.weight takes output.weight's rule.
  m.has_output = false;
  EXPECT_EQ(quant_tensor_type(q4_k_m, m, "token_embd.weight", 4096), GgmlType::Q6_K);
  m.has_output = true;
  EXPECT_EQ(quant_tensor_type(q4_k_m, m, "token_embd.weight", 4096), GgmlType::Q4_K);
  // An output row no block of the preset's type tiles is Q8_0 (and F16 past that).
  EXPECT_EQ(quant_tensor_type(q4_k_m, m, "output.weight", 4096 + 32), GgmlType::Q8_0);
  EXPECT_EQ(quant_tensor_type(q4_k_m, m, "output.weight", 4096 + 16), GgmlType::F16);
  // The plain K types and the float presets apply no rule.
  EXPECT_EQ(quant_tensor_type(*find_quant_preset("q4_k"), m, "output.weight", 4096), GgmlType::Q4_K);
  EXPECT_EQ(quant_tensor_type(*find_quant_preset("bf16"), m, "output.weight", 4096 + 16), GgmlType::BF16);
  EXPECT_FALSE(is_quantizable_tensor("blk.0.attn_norm.weight", 2));
  EXPECT_FALSE(is_quantizable_tensor("position_embd.weight", 2));
  EXPECT_FALSE(is_quantizable_tensor("blk.0.attn_q.bias", 2));
  EXPECT_TRUE(is_quantizable_tensor("blk.0.attn_q.weight", 2));
}

}  // namespace
}  // namespace pagoda
