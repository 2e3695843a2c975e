// The forward pass on the GPU (--device cuda, src/cuda/cuda_forward.h) against llama.cpp's goldens, against the CPU
// path, and Gate 0 on the GPU. Built with -DPAGODA_CUDA=ON (not KERNELS_ONLY); every test is skipped where no GPU is
// visible. Rules:
//   - stories260K's goldens (../shared/golden/stories260K-greedy.jsonl) under their own rule: teacher-forced top-5
//     logits within 1e-3 at every step, greedy tokens equal up to the first step whose recorded margin is < 0.02;
//   - GPU against CPU (stories260K, and synthetic Llama models with F16 and BF16 weights): teacher-forced logits
//     within 1e-3 x max(1, largest |logit|), and greedy tokens equal up to the first near-tie (CPU margin < 0.02);
//   - Gate 0: the engine on the GPU (concurrent requests, chunked prefill, preemption, block sizes 1 and 16, f32 and
//     f16 K/V) gives tokens and logits bitwise equal to each request alone through the GPU's single-sequence path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "engine/engine.h"
#include "engine/sequence_runner.h"
#include "engine_reference.h"
#include "golden_jsonl.h"
#include "model/model.h"
#include "model/synth.h"
#include "util/rng.h"

namespace pagoda {
namespace {

const std::string kShared = PAGODA_SHARED_DIR;

const Model& stories() {
  static const std::unique_ptr<Model> m = [] {
    auto r = Model::load(kShared + "/models/stories260K.gguf");
    if (!r.ok()) std::abort();
    return std::move(*r);
  }();
  return *m;
}

// A synthetic Llama (hidden 256, 2 layers, 8/2 heads: head 32, FFN 512) with `dtype` matrices, loaded once.
const Model& synth(const std::string& dtype) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  auto& slot = models[dtype];
  if (!slot) {
    auto vocab = GgufFile::open(kShared + "/vocab/ggml-vocab-llama-spm.gguf");
    if (!vocab.ok()) std::abort();
    SynthOptions o;
    o.dim = 256, o.layers = 2, o.heads = 8, o.kv_heads = 2, o.ffn = 512, o.context = 1024, o.dtype = dtype, o.seed = 7;
    auto w = synthesize_model(o, *vocab);
    if (!w.ok()) std::abort();
    const std::string path = "/tmp/pagoda_cuda_synth_" + std::to_string(getpid()) + "_" + dtype + ".gguf";
    if (!w->write_file(path).ok()) std::abort();
    auto m = Model::load(path);
    if (!m.ok()) std::abort();
    slot = std::move(*m);
  }
  return *slot;
}

// A GPU runner, or a skip reason when this machine has no GPU.
std::unique_ptr<SequenceRunner> gpu_runner(const Model& m, ThreadPool& pool, int64_t ctx, KvDtype dtype,
                                           std::string* skip) {
  auto r = SequenceRunner::create(m, pool, ctx, dtype, Device::kCuda);
  if (!r.ok()) {
    *skip = r.error().message;
    return nullptr;
  }
  return std::move(*r);
}

#define GPU_RUNNER_OR_SKIP(var, model, pool, ctx, dtype)                          \
  std::string skip_reason_;                                                       \
  auto var = gpu_runner(model, pool, ctx, dtype, &skip_reason_);                  \
  if (!var) {                                                                     \
    if (skip_reason_.find("no CUDA GPU") != std::string::npos) GTEST_SKIP() << skip_reason_; \
    FAIL() << skip_reason_;                                                       \
  }

TEST(CudaForward, Stories260KTeacherForcedLogitsMatchLlamaCpp) {
  ThreadPool pool(2);
  GPU_RUNNER_OR_SKIP(runner, stories(), pool, 512, KvDtype::kF32);
  const auto cases = load_golden_jsonl(kShared + "/golden/stories260K-greedy.jsonl");
  ASSERT_FALSE(cases.empty());
  float worst = 0;
  for (const GoldenCase& c : cases) {
    std::vector<int32_t> tokens = c.prompt_ids;
    for (size_t s = 0; s + 1 < c.steps.size(); ++s) tokens.push_back(c.steps[s].top[0].first);
    runner->reset();
    auto logits = runner->eval(tokens, /*all_logits=*/true);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    const int64_t V = stories().hparams().n_vocab;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      const float* row = logits->data() + (c.prompt_ids.size() - 1 + s) * V;
      for (const auto& [id, want] : c.steps[s].top) {
        worst = std::max(worst, std::fabs(row[id] - want));
        ASSERT_NEAR(row[id], want, 1e-3f) << c.prompt << " step " << s << " token " << id;
      }
    }
  }
  std::printf("stories260K on the GPU: largest |logit - llama.cpp| over the top-5 of every step: %.2e\n", worst);
}

TEST(CudaForward, Stories260KGreedyReproducesLlamaCppUpToFirstNearTie) {
  ThreadPool pool(2);
  GPU_RUNNER_OR_SKIP(runner, stories(), pool, 512, KvDtype::kF32);
  for (const GoldenCase& c : load_golden_jsonl(kShared + "/golden/stories260K-greedy.jsonl")) {
    runner->reset();
    auto logits = runner->eval(c.prompt_ids);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    for (size_t s = 0; s < c.steps.size(); ++s) {
      const auto& top = c.steps[s].top;
      if (top[0].second - top[1].second < 0.02f) break;  // a near-tie: the rule stops comparing here
      const int32_t next = Sampler::argmax(*logits);
      ASSERT_EQ(next, top[0].first) << c.prompt << " step " << s;
      logits = runner->eval(std::span<const int32_t>(&next, 1));
      ASSERT_TRUE(logits.ok()) << logits.error().message;
    }
  }
}

// Teacher-forced logits of the CPU and GPU paths over the same tokens, and greedy tokens up to the first near-tie.
void expect_gpu_matches_cpu(const Model& m, KvDtype dtype) {
  ThreadPool pool(2);
  GPU_RUNNER_OR_SKIP(gpu, m, pool, 512, dtype);
  SequenceRunner cpu(m, pool, 512, dtype);
  Rng rng(11);
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 40; ++i) prompt.push_back(static_cast<int32_t>(3 + rng.next_u64() % 500));
  // Greedy on the CPU first, then both paths teacher-forced over prompt + those tokens.
  const SequenceOutput ref = greedy_single_sequence(m, prompt, 48, 512, dtype);
  std::vector<int32_t> tokens = prompt;
  tokens.insert(tokens.end(), ref.ids.begin(), ref.ids.end() - 1);
  auto lc = cpu.eval(tokens, true);
  ASSERT_TRUE(lc.ok()) << lc.error().message;
  const std::vector<float> cpu_logits(lc->begin(), lc->end());
  auto lg = gpu->eval(tokens, true);
  ASSERT_TRUE(lg.ok()) << lg.error().message;
  float scale = 1, worst = 0;
  for (float x : cpu_logits) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < cpu_logits.size(); ++i) worst = std::max(worst, std::fabs((*lg)[i] - cpu_logits[i]));
  std::printf("%s on the GPU, %s K/V: largest |GPU - CPU| logit %.2e (logits up to %.1f)\n", m.hparams().spec->name,
              kv_dtype_name(dtype), worst, scale);
  EXPECT_LE(worst, 1e-3f * scale);
  // Greedy tokens, the GPU free-running.
  gpu->reset();
  auto logits = gpu->eval(prompt);
  ASSERT_TRUE(logits.ok());
  for (size_t s = 0; s < ref.ids.size(); ++s) {
    std::vector<float> sorted = ref.logits[s];
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    if (sorted[0] - sorted[1] < 0.02f) break;
    const int32_t next = Sampler::argmax(*logits);
    ASSERT_EQ(next, ref.ids[s]) << "step " << s;
    if (s + 1 == ref.ids.size()) break;
    logits = gpu->eval(std::span<const int32_t>(&next, 1));
    ASSERT_TRUE(logits.ok());
  }
}

TEST(CudaForward, Stories260KMatchesCpuF32Kv) { expect_gpu_matches_cpu(stories(), KvDtype::kF32); }
TEST(CudaForward, Stories260KMatchesCpuF16Kv) { expect_gpu_matches_cpu(stories(), KvDtype::kF16); }
TEST(CudaForward, SynthF16MatchesCpu) { expect_gpu_matches_cpu(synth("f16"), KvDtype::kF16); }
TEST(CudaForward, SynthBF16MatchesCpu) { expect_gpu_matches_cpu(synth("bf16"), KvDtype::kBF16); }

// Gate 0 on the GPU: the engine's batches against each request alone through the GPU single-sequence path.
void expect_gate0_on_gpu(const Model& m, int32_t block_size, KvDtype dtype) {
  ThreadPool pool(2);
  GPU_RUNNER_OR_SKIP(single, m, pool, 512, dtype);
  Rng rng(block_size * 31 + static_cast<int>(dtype));
  std::vector<int32_t> shared;
  for (int i = 0; i < 40; ++i) shared.push_back(static_cast<int32_t>(3 + rng.next_u64() % 500));
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r;
    r.id = std::to_string(i);
    r.prompt.push_back(1);
    if (i % 3 == 0) r.prompt.insert(r.prompt.end(), shared.begin(), shared.end());
    const int tail = 1 + static_cast<int>(rng.next_u64() % 90);
    for (int t = 0; t < tail; ++t) r.prompt.push_back(static_cast<int32_t>(3 + rng.next_u64() % 500));
    r.max_tokens = 4 + static_cast<int64_t>(rng.next_u64() % 30);
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    reqs.push_back(std::move(r));
  }
  EngineConfig config;
  config.device = Device::kCuda;
  config.block_size = block_size;
  config.kv_cache_dtype = dtype;
  config.max_num_batched_tokens = 48;  // prefills run in chunks beside decodes
  config.num_blocks = 200 / block_size + 8;  // small: sequences are preempted and recomputed
  config.max_model_len = 256;
  auto engine = Engine::create(m, config);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back((*engine)->submit(r));
  (*engine)->run_until_idle();
  const EngineStats stats = (*engine)->stats();
  const size_t V = m.hparams().n_vocab;
  for (size_t i = 0; i < reqs.size(); ++i) {
    SequenceOutput got;
    drain_stream(*streams[i], got);
    ASSERT_NE(got.finish, FinishReason::kError) << got.error;
    // The reference: the request alone on the GPU's single-sequence path.
    single->reset();
    auto logits = single->eval(reqs[i].prompt);
    ASSERT_TRUE(logits.ok());
    for (size_t s = 0; s < got.ids.size(); ++s) {
      const int32_t next = Sampler::argmax(*logits);
      ASSERT_EQ(got.ids[s], next) << "request " << i << " step " << s;
      ASSERT_EQ(0, std::memcmp(got.logits[s].data(), logits->data(), V * sizeof(float)))
          << "request " << i << " step " << s << ": the batched logits differ from the single sequence's";
      if (s + 1 < got.ids.size()) {
        logits = single->eval(std::span<const int32_t>(&next, 1));
        ASSERT_TRUE(logits.ok());
      }
    }
  }
  std::printf("Gate 0 on the GPU, block size %d, %s: %zu requests, %lld preemptions\n", block_size,
              kv_dtype_name(dtype), reqs.size(), static_cast<long long>(stats.preemptions));
}

TEST(CudaForward, Gate0BlockSize16F16) { expect_gate0_on_gpu(stories(), 16, KvDtype::kF16); }
TEST(CudaForward, Gate0BlockSize1F32) { expect_gate0_on_gpu(stories(), 1, KvDtype::kF32); }
TEST(CudaForward, Gate0SynthF16) { expect_gate0_on_gpu(synth("f16"), 16, KvDtype::kF16); }

TEST(CudaForward, RefusesWhatTheGpuDoesNotRun) {
  ThreadPool pool(1);
  // The model checks come before any GPU is looked for: these run on every CUDA build.
  auto q = Model::load(kShared + "/models/quant/stories260K-Q8_0.gguf");
  ASSERT_TRUE(q.ok());
  auto r = SequenceRunner::create(**q, pool, 64, KvDtype::kF16, Device::kCuda);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("Q8_0"), std::string::npos) << r.error().message;
  auto g = Model::load(kShared + "/models/arch/gpt2.gguf");
  ASSERT_TRUE(g.ok());
  auto e = SequenceRunner::create(**g, pool, 64, KvDtype::kF16, Device::kCuda);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("gpt2"), std::string::npos) << e.error().message;
  // A Q8_0 KV cache is refused when the pool is made, on a GPU.
  auto k = SequenceRunner::create(stories(), pool, 64, KvDtype::kQ8_0, Device::kCuda);
  ASSERT_FALSE(k.ok());
  if (k.error().message.find("no CUDA GPU") != std::string::npos) GTEST_SKIP() << k.error().message;
  EXPECT_NE(k.error().message.find("q8_0"), std::string::npos) << k.error().message;
}

}  // namespace
}  // namespace pagoda
