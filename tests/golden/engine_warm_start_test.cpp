// Warm start's serving guarantee (issue #16): a request whose first token came from warm start continues, from
// token 2 on, bitwise as a cold request whose first token is forced to that token - tokens and logits - under
// continuous batching, chunked prefill and preemption, greedy and sampled. Misses are ordinary cold requests.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/engine.h"
#include "engine_reference.h"
#include "model/model.h"
#include "warmstart/fit.h"
#include "warmstart/kv_summary.h"
#include "warmstart/library.h"
#include "warmstart/paraphrase_data.h"
#include "warmstart/prompt_embedding.h"
#include "warmstart/prompt_state.h"
#include "warmstart/warm_start_service.h"

namespace pagoda {
namespace {

using namespace warmstart;

using Output = SequenceOutput;

std::vector<Output> run(const Model& model, const std::vector<GenerationRequest>& reqs,
                        std::shared_ptr<WarmStartService> warm, EngineStats* stats_out, int64_t num_blocks = 20) {
  EngineConfig config;
  config.kv_cache_dtype = KvDtype::kF32;
  config.block_size = 16;
  config.num_blocks = num_blocks;  // 20: less than all requests need at once, so preemption
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 64;  // chunked prefill
  config.num_threads = 2;
  config.watermark_blocks = 0;
  config.warm_start = std::move(warm);
  auto engine = Engine::create(model, config);
  EXPECT_TRUE(engine.ok());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back((*engine)->submit(r));
  std::vector<Output> out(reqs.size());
  for (int step = 0; (*engine)->step(); ++step) {
    EXPECT_TRUE((*engine)->check_invariants().ok());
    for (size_t i = 0; i < reqs.size(); ++i) drain_stream(*streams[i], out[i]);
    if (step > 100000) break;
  }
  for (size_t i = 0; i < reqs.size(); ++i) drain_stream(*streams[i], out[i]);
  if (stats_out) *stats_out = (*engine)->stats();
  return out;
}

// Maps fitted on a few training pairs; a library of the test sources (whose paraphrases are the targets).
std::shared_ptr<WarmStartService> build_service(const Model& model, const std::string& dir, PairSplit& split) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  DataOptions data;
  data.instances_per_template = 4;
  data.adversarial_per_template = 1;
  data.max_body_sentences = 12;
  split = generate_pairs(data);
  std::vector<TextPair> train;
  for (const auto& p : split.train)
    if (!p.adversarial) train.push_back({p.source, p.target});
  FitOptions fit;
  fit.summary.m = 8;
  fit.summary.ref_positions = 8;
  FitReport report;
  auto maps = fit_maps(model, train, fit, report);
  if (!maps.ok()) return nullptr;
  if (!save_maps(dir + "/maps.safetensors", *maps).ok()) return nullptr;
  ThreadPool pool(1);
  TransformerWorkspace ws;
  WarmStartLibrary lib;
  for (const auto& p : split.test) {
    const auto tokens = model.tokenizer().encode(p.source, true);
    auto state = run_prompt(model, tokens, pool, ws);
    if (!state.ok()) return nullptr;
    auto summary = summarize_prefix(model.hparams(), *state, fit.summary);
    if (!summary.ok()) return nullptr;
    lib.insert({tokens, embed_prompt(model, tokens), std::move(*summary)});
  }
  if (!lib.save(dir + "/library").ok()) return nullptr;
  WarmStartConfig wc;
  wc.maps_path = dir + "/maps.safetensors";
  wc.library_dir = dir + "/library";
  wc.threshold = 0.9;
  auto service = WarmStartService::open(model, wc);
  if (!service.ok()) return nullptr;
  return std::shared_ptr<WarmStartService>(std::move(*service));

}

TEST(EngineWarmStart, FromTokenTwoOnBitwiseEqualToAColdRequestWithTheFirstTokenForced) {
  auto loaded = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf");
  ASSERT_TRUE(loaded.ok());
  const Model& model = **loaded;
  const std::string dir = ::testing::TempDir() + "/pagoda-warm-start-engine";

  PairSplit split;
  auto service = build_service(model, dir, split);
  ASSERT_NE(service, nullptr);

  std::vector<GenerationRequest> reqs;
  for (size_t i = 0; i < split.test.size(); ++i) {
    GenerationRequest r;
    r.id = std::to_string(i);
    r.prompt = model.tokenizer().encode(split.test[i].target, true);
    r.max_tokens = i % 5 == 4 ? 1 : 12;  // some end at the warm token: no prefill at all
    r.return_logits = true;
    if (i % 3 == 1) {
      r.sampling.temperature = 0.9f;
      r.seed = 1000 + i;
    } else {
      r.sampling.temperature = 0.0f;
    }
    reqs.push_back(std::move(r));
  }
  // Two requests too short for the summary, and one far from every library entry: misses.
  for (const char* text : {"Hi.", "Tom", "zzzz qqqq xxxx 12345 67890 !!!! ???? @@@@ #### $$$$ %%%% ^^^^"}) {
    GenerationRequest r;
    r.id = text;
    r.prompt = model.tokenizer().encode(text, true);
    r.max_tokens = 6;
    r.sampling.temperature = 0.0f;
    r.return_logits = true;
    reqs.push_back(std::move(r));
  }

  EngineStats warm_stats;
  const auto warm = run(model, reqs, service, &warm_stats);
  std::vector<GenerationRequest> forced = reqs;
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_NE(warm[i].finish, FinishReason::kError) << warm[i].error;
    ASSERT_FALSE(warm[i].ids.empty());
    forced[i].forced_first_token = warm[i].ids[0];
  }
  EngineStats cold_stats;
  const auto cold = run(model, forced, nullptr, &cold_stats);

  int hits = 0, misses = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    hits += warm[i].warm_start == WarmStartUse::kHit;
    misses += warm[i].warm_start == WarmStartUse::kMiss;
    EXPECT_EQ(cold[i].warm_start, WarmStartUse::kOff);
    ASSERT_EQ(warm[i].ids, cold[i].ids) << "request " << i;
    ASSERT_EQ(warm[i].finish, cold[i].finish) << "request " << i;
    for (size_t s = 1; s < warm[i].ids.size(); ++s)
      ASSERT_EQ(0, std::memcmp(warm[i].logits[s].data(), cold[i].logits[s].data(),
                               model.hparams().n_vocab * sizeof(float)))
          << "request " << i << " token " << s + 1;
    if (warm[i].warm_start == WarmStartUse::kMiss) {  // a miss is a cold request: its first logits are the prompt's too
      ASSERT_EQ(0, std::memcmp(warm[i].logits[0].data(), cold[i].logits[0].data(), model.hparams().n_vocab * 4));
    }
  }
  EXPECT_GT(hits, 0);
  EXPECT_GE(misses, 3);
  EXPECT_EQ(warm_stats.warm_start.hits, hits);
  EXPECT_EQ(warm_stats.warm_start.misses, misses);
  EXPECT_GT(cold_stats.preemptions + warm_stats.preemptions, 0) << "the pool never ran short";
  // A hit with max_tokens 1 never prefills: fewer prompt tokens computed than the cold run. Compared on a pool large
  // enough that nothing is preempted: with preemption the recomputed tokens depend on when each warm decision
  // lands (the worker thread), so the counts would not be comparable.
  EngineStats warm_big, cold_big;
  (void)run(model, reqs, service, &warm_big, 4096);
  (void)run(model, forced, nullptr, &cold_big, 4096);
  ASSERT_EQ(warm_big.preemptions + cold_big.preemptions, 0);
  EXPECT_LT(warm_big.prompt_tokens_computed, cold_big.prompt_tokens_computed);
  std::printf("[warm-start gate] %zu requests: %d hits, %d misses; tokens 2.. bitwise equal to forced-cold\n",
              reqs.size(), hits, misses);
}

// The warm path runs on its worker: while a decision is held back, the engine keeps stepping the other requests
// (the warm request waits outside the scheduler), and once released the warm request completes as usual.
TEST(EngineWarmStart, TheEngineKeepsSteppingWhileADecisionRuns) {
  auto loaded = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf");
  ASSERT_TRUE(loaded.ok());
  const Model& model = **loaded;
  PairSplit split;
  auto service = build_service(model, ::testing::TempDir() + "/pagoda-warm-start-worker", split);
  ASSERT_NE(service, nullptr);
  EngineConfig config;
  config.num_threads = 1;
  config.warm_start = service;
  auto engine = Engine::create(model, config);
  ASSERT_TRUE(engine.ok());
  GenerationRequest other;  // not eligible for warm start (logprobs): scheduled at once
  other.id = "other";
  other.prompt = model.tokenizer().encode(split.test[0].source, true);
  other.max_tokens = 40;
  other.ignore_eos = true;
  other.logprobs = 0;
  other.sampling.temperature = 0.0f;
  GenerationRequest warm;
  warm.id = "warm";
  warm.prompt = model.tokenizer().encode(split.test[0].target, true);
  warm.max_tokens = 4;
  warm.sampling.temperature = 0.0f;
  Output other_out, warm_out;
  auto other_stream = (*engine)->submit(other);
  auto warm_stream = (*engine)->submit(warm);
  {
    auto hold = service->hold_decisions();
    for (int i = 0; i < 6; ++i) ASSERT_TRUE((*engine)->step());
    drain_stream(*other_stream, other_out);
    drain_stream(*warm_stream, warm_out);
    EXPECT_GE(other_out.ids.size(), 4u) << "the running request waited for the warm decision";
    EXPECT_TRUE(warm_out.ids.empty());
    EXPECT_EQ((*engine)->stats().warm_start_pending, 1);
  }
  while ((*engine)->step()) {
  }
  drain_stream(*other_stream, other_out);
  drain_stream(*warm_stream, warm_out);
  EXPECT_EQ(other_out.ids.size(), 40u);
  EXPECT_EQ(warm_out.ids.size(), 4u);
  EXPECT_NE(warm_out.warm_start, WarmStartUse::kOff);
  EXPECT_EQ((*engine)->stats().warm_start_pending, 0);
}

}  // namespace
}  // namespace pagoda
