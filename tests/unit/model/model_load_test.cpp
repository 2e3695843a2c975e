// Loading synthetic models: every weight type runs, and malformed models fail with errors that name the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "engine/sequence_runner.h"
#include "io/gguf_writer.h"
#include "model/model.h"
#include "model/synth.h"

namespace pagoda {
namespace {

const std::string kVocab = std::string(PAGODA_SHARED_DIR) + "/vocab/ggml-vocab-llama-spm.gguf";

std::string temp_path(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "pagoda_" +
         std::to_string(getpid()) + "_" + name;
}

SynthOptions tiny(GgmlType dtype) {
  SynthOptions o;
  o.dim = 64;
  o.layers = 2;
  o.heads = 4;
  o.kv_heads = 2;
  o.ffn = 96;
  o.context = 64;
  o.dtype = ggml_type_traits(dtype).name;
  o.seed = 5;
  return o;
}

// Writes a synthetic model, optionally rewriting its metadata or tensors on the way.
using TensorEdit =
    std::function<void(std::string& name, GgmlType& type, std::vector<uint64_t>& ne, std::vector<uint8_t>& bytes)>;
std::string write_model(const std::string& name, GgmlType dtype, const TensorEdit& edit = nullptr,
                        const std::function<void(GgufWriter&)>& meta = nullptr) {
  auto vocab = GgufFile::open(kVocab);
  EXPECT_TRUE(vocab.ok());
  auto w = synthesize_model(tiny(dtype), *vocab);
  EXPECT_TRUE(w.ok()) << w.error().message;
  const std::string path = temp_path(name);
  if (!edit && !meta) {
    EXPECT_TRUE(w->write_file(path).ok());
    return path;
  }
  auto bytes = w->to_bytes();
  auto parsed = GgufFile::parse(bytes.data(), bytes.size());
  EXPECT_TRUE(parsed.ok());
  GgufWriter out;
  for (const auto& [k, v] : parsed->metadata()) out.set(k, v);
  if (meta) meta(out);
  for (const auto& t : parsed->tensors()) {
    std::string tname = t.name;
    GgmlType type = t.type;
    std::vector<uint64_t> ne(t.ne, t.ne + t.n_dims);
    std::vector<uint8_t> data(t.data, t.data + t.n_bytes);
    if (edit) edit(tname, type, ne, data);
    out.add_tensor(tname, type, ne, data);
  }
  EXPECT_TRUE(out.write_file(path).ok());
  return path;
}

class SynthModel : public ::testing::TestWithParam<GgmlType> {};

TEST_P(SynthModel, LoadsRunsAndPrefillEqualsDecode) {
  const std::string path = write_model(std::string("ok_") + ggml_type_traits(GetParam()).name + ".gguf", GetParam());
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->hparams().n_head_kv, 2);
  EXPECT_EQ((*m)->weights().token_embd.type, GetParam());
  ThreadPool pool(2);
  SequenceRunner batched(**m, pool), stepwise(**m, pool);
  const std::vector<int32_t> ids = {1, 15043, 3186, 29892, 920, 526, 366, 29973};
  auto all = batched.eval(ids, true);
  ASSERT_TRUE(all.ok());
  std::vector<float> copy(all->begin(), all->end());
  const size_t V = (*m)->hparams().n_vocab;
  for (float x : copy) ASSERT_TRUE(std::isfinite(x));
  for (size_t t = 0; t < ids.size(); ++t) {
    auto one = stepwise.eval(std::span<const int32_t>(&ids[t], 1));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(0, std::memcmp(one->data(), copy.data() + t * V, V * sizeof(float))) << "token " << t;
  }
  // The logits depend on the input: a different last token changes them.
  batched.reset();
  std::vector<int32_t> other = ids;
  other.back() = 42;
  auto l2 = batched.eval(other);
  ASSERT_TRUE(l2.ok());
  EXPECT_NE(0, std::memcmp(l2->data(), copy.data() + (ids.size() - 1) * V, V * sizeof(float)));
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SynthModel,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0),
                         [](const auto& info) { return std::string(ggml_type_traits(info.param).name); });

void expect_load_error(const std::string& path, const std::string& fragment) {
  auto m = Model::load(path);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find(fragment), std::string::npos) << m.error().message;
  std::remove(path.c_str());
}

TEST(ModelLoad, UnsupportedTensorTypeIsNamed) {
  // MXFP4 (32 elements in 17 bytes) is one of the types pagoda names but does not run.
  auto path = write_model("mxfp4.gguf", GgmlType::F32, [](std::string& name, GgmlType& type, auto& ne, auto& bytes) {
    if (name != "blk.1.attn_q.weight") return;
    type = GgmlType::MXFP4;
    bytes.resize(ne[0] / 32 * 17 * ne[1]);
  });
  expect_load_error(path, "tensor 'blk.1.attn_q.weight' has type MXFP4, which pagoda does not support yet");
}

TEST(ModelLoad, WrongShapeIsNamed) {
  auto path = write_model("shape.gguf", GgmlType::F32, [](std::string& name, GgmlType&, auto& ne, auto& bytes) {
    if (name != "blk.0.ffn_up.weight") return;
    ne[1] = 32;
    bytes.resize(ne[0] * ne[1] * 4);
  });
  expect_load_error(path, "tensor 'blk.0.ffn_up.weight' has shape [64, 32], expected [64, 96]");
}

TEST(ModelLoad, MissingTensorIsNamed) {
  auto path = write_model("missing.gguf", GgmlType::F32, [](std::string& name, GgmlType&, auto&, auto&) {
    if (name == "blk.1.ffn_norm.weight") name = "blk.1.something_else";
  });
  expect_load_error(path, "tensor 'blk.1.ffn_norm.weight' is missing");
}

TEST(ModelLoad, UnsupportedArchitectureAndBadHparamsAreNamed) {
  expect_load_error(write_model("arch.gguf", GgmlType::F32, nullptr,
                                [](GgufWriter& w) { w.set_string("general.architecture", "mamba"); }),
                    "unsupported architecture 'mamba'");
  expect_load_error(write_model("heads.gguf", GgmlType::F32, nullptr,
                                [](GgufWriter& w) { w.set_uint32("llama.attention.head_count_kv", 3); }),
                    "not a multiple of head_count_kv");
  expect_load_error(
      write_model("layers.gguf", GgmlType::F32, nullptr, [](GgufWriter& w) { w.set_uint32("llama.block_count", 0); }),
      "'llama.block_count' = 0 is out of range");
}

TEST(ModelLoad, RopeScalingFollowsLlamaCppDefaults) {
  // No scaling type: linear by default; the legacy rope.scale_linear key supplies the factor.
  auto path = write_model("rope.gguf", GgmlType::F32, nullptr,
                          [](GgufWriter& w) { w.set_float32("llama.rope.scale_linear", 4.0f); });
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FLOAT_EQ((*m)->hparams().rope.freq_scale, 0.25f);
  std::remove(path.c_str());
  path = write_model("rope_none.gguf", GgmlType::F32, nullptr, [](GgufWriter& w) {
    w.set_string("llama.rope.scaling.type", "none");
    w.set_float32("llama.rope.scaling.factor", 4.0f);
  });
  m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FLOAT_EQ((*m)->hparams().rope.freq_scale, 1.0f);
  std::remove(path.c_str());
}

TEST(ModelLoad, KvCacheLargerThanTheMachineIsAnError) {
  auto path = write_model("kvbig.gguf", GgmlType::F32);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok());
  auto bytes = ContiguousKvCache::check_size((*m)->hparams(), int64_t{1} << 40);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().message.find("a KV cache of"), std::string::npos) << bytes.error().message;
  EXPECT_TRUE(ContiguousKvCache::check_size((*m)->hparams(), 64).ok());
  std::remove(path.c_str());
}

TEST(ModelLoad, ContextOverflowIsAnError) {
  auto path = write_model("ctx.gguf", GgmlType::F32);
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok());
  ThreadPool pool(1);
  SequenceRunner runner(**m, pool, 4);
  std::vector<int32_t> ids = {1, 2, 3, 4, 5};
  auto r = runner.eval(ids);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceed the context size of 4"), std::string::npos) << r.error().message;
  std::vector<int32_t> bad = {1, 999999};
  r = runner.eval(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("outside the vocabulary"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace pagoda
