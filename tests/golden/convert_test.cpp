// `pagoda convert` against llama.cpp's own convert_hf_to_gguf.py: converting each Hugging Face twin in
// ../shared/models/arch/ to F32 must give llama.cpp's GGUF twin back, tensor for tensor (names, types, shapes and
// bytes: Llama's Q/K permutation, GPT-2's transposes and GPT-NeoX's QKV regrouping included) and with the metadata
// that decides how a model runs (architecture keys, tokenizer tokens, types, scores/merges, special ids).
// Quantized conversions load and stay close to the goldens' logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "engine/sequence_runner.h"
#include "golden_shared.h"
#include "model/convert.h"
#include "model/hf_folder.h"
#include "model/model.h"

namespace pagoda {
namespace {

class ConvertTwin : public ::testing::TestWithParam<const char*> {};

TEST_P(ConvertTwin, F32ConversionReproducesLlamaCppsGguf) {
  const std::string arch = GetParam();
  auto folder = open_hf_folder(kShared + "/models/arch/" + arch + "-hf", /*for_convert=*/true);
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  auto writer = convert_to_gguf(folder->gguf, "f32");
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  const std::vector<uint8_t> bytes = writer->to_bytes();
  auto ours = GgufFile::parse(bytes.data(), bytes.size(), "converted");
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  auto theirs = GgufFile::open(kShared + "/models/arch/" + arch + ".gguf");
  ASSERT_TRUE(theirs.ok()) << theirs.error().message;

  ASSERT_EQ(ours->tensors().size(), theirs->tensors().size());
  for (const GgufTensorInfo& t : theirs->tensors()) {
    const GgufTensorInfo* o = ours->find_tensor(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    EXPECT_EQ(o->type, t.type) << t.name;
    EXPECT_EQ(o->shape_string(), t.shape_string()) << t.name;
    ASSERT_EQ(o->n_bytes, t.n_bytes) << t.name;
    EXPECT_EQ(0, std::memcmp(o->data, t.data, t.n_bytes)) << t.name << " differs";
  }
  // Every key that decides how the model runs or tokenizes agrees (general.* naming and bookkeeping aside).
  for (const auto& [key, value] : theirs->metadata()) {
    if (key.rfind("general.", 0) == 0 && key != "general.architecture") continue;
    if (key == "tokenizer.ggml.scores") continue;  // ours come from the merges, theirs from tokenizer.model
    if (key.find("rope.scaling.original_context_length") != std::string::npos) continue;  // informational
    const GgufValue* mine = ours->find(key);
    if (mine == nullptr) {
      // Keys llama.cpp writes with its defaults (pagoda's readers default them the same way).
      const bool defaulted = key.find(".vocab_size") != std::string::npos ||
                             key.find("rope.dimension_count") != std::string::npos ||
                             key.find("attention.sliding_window") != std::string::npos ||
                             key == "tokenizer.ggml.add_sep_token" ||
                             key.find("attention.value_length") != std::string::npos ||
                             key.find("attention.key_length") != std::string::npos;
      EXPECT_TRUE(defaulted) << arch << ": key '" << key << "' is missing";
      continue;
    }
    EXPECT_EQ(mine->to_display_string(64), value.to_display_string(64)) << arch << ": key '" << key << "'";
  }
}

TEST_P(ConvertTwin, QuantizedConversionsLoadAndStayClose) {
  const std::string arch = GetParam();
  auto folder = open_hf_folder(kShared + "/models/arch/" + arch + "-hf", /*for_convert=*/true);
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  auto reference = Model::load(kShared + "/models/arch/" + arch + ".gguf");
  ASSERT_TRUE(reference.ok());
  const std::vector<int32_t> prompt = {1, 403, 383, 286, 261, 259, 271, 422, 284, 277};
  ThreadPool pool(2);
  SequenceRunner ref(**reference, pool, 0, KvDtype::kF32);
  auto ref_logits = ref.eval(prompt);
  ASSERT_TRUE(ref_logits.ok());
  const std::vector<float> expected(ref_logits->begin(), ref_logits->end());
  for (const char* dtype : {"f16", "bf16", "q8_0", "q4_k_m"}) {
    auto writer = convert_to_gguf(folder->gguf, dtype);
    ASSERT_TRUE(writer.ok()) << dtype << ": " << writer.error().message;
    const std::string path = ::testing::TempDir() + "/pagoda-convert-" + arch + "-" + dtype + ".gguf";
    ASSERT_TRUE(writer->write_file(path).ok());
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << dtype << ": " << m.error().message;
    SequenceRunner run(**m, pool, 0, KvDtype::kF32);
    auto logits = run.eval(prompt);
    ASSERT_TRUE(logits.ok());
    float worst = 0.0f;
    for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::fabs((*logits)[i] - expected[i]));
    // Random weights of unit scale: F16/BF16 rounding moves logits of ~25 by well under 1; 4-bit by more.
    const float bound = std::string(dtype) == "q4_k_m" ? 6.0f : 1.0f;
    EXPECT_LT(worst, bound) << arch << " " << dtype;
    std::printf("[convert] %-8s %-7s max |logit - f32| %.3f\n", arch.c_str(), dtype, worst);
    std::remove(path.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, ConvertTwin, ::testing::Values("llama", "qwen2", "qwen3", "phi3", "gpt2", "gptneox"));

}  // namespace
}  // namespace pagoda
