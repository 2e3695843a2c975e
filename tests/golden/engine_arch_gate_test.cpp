// Gate 0 for every architecture: the paged engine (continuous batching, chunked prefill, a shared prefix served from
// the prefix cache, a pool small enough to preempt) gives greedy tokens and logits bitwise identical to running each
// request alone through the single-sequence path - for each family's GGUF twin, its Hugging Face folder, and its
// Q8_0 conversion (quantized matmuls).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "engine/engine.h"
#include "engine_reference.h"
#include "golden_shared.h"
#include "model/convert.h"
#include "model/hf_folder.h"
#include "model/model.h"
#include "util/rng.h"

namespace pagoda {
namespace {

struct GateCase {
  const char* arch;
  const char* twin;  // "gguf", "hf" or "q8_0" (converted from the folder)
};
void PrintTo(const GateCase& c, std::ostream* os) { *os << c.arch << "/" << c.twin; }

Result<std::unique_ptr<Model>> load(const GateCase& c) {
  const std::string twin = c.twin;
  if (twin == "gguf") return Model::load(kShared + "/models/arch/" + c.arch + ".gguf");
  if (twin == "hf") return Model::load(kShared + "/models/arch/" + c.arch + "-hf");
  auto folder = open_hf_folder(kShared + "/models/arch/" + c.arch + "-hf", /*for_convert=*/true);
  if (!folder.ok()) return folder.error();
  auto writer = convert_to_gguf(folder->gguf, twin);
  if (!writer.ok()) return writer.error();
  const std::string path = ::testing::TempDir() + "/pagoda-gate-" + c.arch + "-" + twin + ".gguf";
  PAGODA_RETURN_IF_ERROR(writer->write_file(path));
  auto m = Model::load(path);
  std::remove(path.c_str());  // mapped: the pages stay readable
  return m;
}

class ArchGate : public ::testing::TestWithParam<GateCase> {};

TEST_P(ArchGate, EngineEqualsSingleSequenceBitwise) {
  auto loaded = load(GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Model& model = **loaded;
  Rng rng(7);
  auto random_token = [&] { return static_cast<int32_t>(3 + rng.next_u64() % 509); };
  std::vector<int32_t> shared;
  for (int i = 0; i < 40; ++i) shared.push_back(random_token());
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r;
    r.id = std::to_string(i);
    r.prompt.push_back(1);
    if (i % 2 == 0) r.prompt.insert(r.prompt.end(), shared.begin(), shared.end());
    const int tail = 1 + static_cast<int>(rng.next_u64() % 60);
    for (int t = 0; t < tail; ++t) r.prompt.push_back(random_token());
    r.max_tokens = 4 + static_cast<int64_t>(rng.next_u64() % 24);
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    reqs.push_back(std::move(r));
  }
  EngineConfig config;
  config.kv_cache_dtype = KvDtype::kF32;
  config.block_size = 16;
  config.num_blocks = 20;  // far less than 12 requests need at once: preemption
  config.max_num_seqs = 12;
  config.max_num_batched_tokens = 48;
  config.num_threads = 2;
  config.watermark_blocks = 0;
  config.model_id = std::string(GetParam().arch) + "/" + GetParam().twin;
  auto engine = Engine::create(model, config);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back((*engine)->submit(r));
  std::vector<SequenceOutput> got(reqs.size());
  for (int step = 0; (*engine)->step(); ++step) {
    ASSERT_TRUE((*engine)->check_invariants().ok());
    for (size_t i = 0; i < reqs.size(); ++i) drain_stream(*streams[i], got[i]);
    ASSERT_LT(step, 100000);
  }
  for (size_t i = 0; i < reqs.size(); ++i) drain_stream(*streams[i], got[i]);
  const EngineStats stats = (*engine)->stats();
  EXPECT_GT(stats.blocks.prefix_hit_tokens, 0) << "the shared prefix was never served from the cache";
  EXPECT_GT(stats.preemptions, 0) << "the pool never ran short";
  const size_t n_vocab = model.hparams().n_vocab;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const SequenceOutput ref = greedy_single_sequence(model, reqs[i].prompt, reqs[i].max_tokens, 512);
    ASSERT_NE(got[i].finish, FinishReason::kError) << got[i].error;
    ASSERT_EQ(got[i].ids, ref.ids) << "request " << i;
    for (size_t s = 0; s < ref.ids.size(); ++s)
      ASSERT_EQ(0, std::memcmp(got[i].logits[s].data(), ref.logits[s].data(), n_vocab * sizeof(float)))
          << "request " << i << " step " << s;
  }
  std::printf("[gate] %-8s %-5s 12 requests bitwise equal; %lld preemptions, %lld prefix-hit tokens\n",
              GetParam().arch, GetParam().twin, static_cast<long long>(stats.preemptions),
              static_cast<long long>(stats.blocks.prefix_hit_tokens));
}

std::vector<GateCase> cases() {
  std::vector<GateCase> out;
  for (const char* arch : {"llama", "qwen2", "qwen3", "phi3", "gpt2", "gptneox"})
    for (const char* twin : {"gguf", "hf", "q8_0"}) out.push_back({arch, twin});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchGate, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(info.param.arch) + "_" + info.param.twin;
});

}  // namespace
}  // namespace pagoda
