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
                        std::shared_ptr<WarmStartService> warm, EngineStats* stats_out) {
  EngineConfig config;
  config.kv_cache_dtype = KvDtype::kF32;
  config.block_size = 16;
  config.num_blocks = 20;  // less than all requests need at once: preemption
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

TEST(EngineWarmStart, FromTokenTwoOnBitwiseEqualToAColdRequestWithTheFirstTokenForced) {
  auto loaded = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf");
  ASSERT_TRUE(loaded.ok());
  const Model& model = **loaded;
  const std::string dir = ::testing::TempDir() + "/pagoda-warm-start-engine";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  // Maps fitted on a few training pairs; a library of test sources; the targets are their paraphrases.
  DataOptions data;
  data.instances_per_template = 4;
  data.adversarial_per_template = 1;
  data.max_body_sentences = 12;
  const PairSplit split = generate_pairs(data);
  std::vector<TextPair> train;
  for (const auto& p : split.train)
    if (!p.adversarial) train.push_back({p.source, p.target});
  FitOptions fit;
  fit.summary.m = 8;
  fit.summary.ref_positions = 8;
  FitReport report;
  auto maps = fit_maps(model, train, fit, report);
  ASSERT_TRUE(maps.ok()) << maps.error().message;
  ASSERT_TRUE(save_maps(dir + "/maps.safetensors", *maps).ok());
  ThreadPool pool(1);
  TransformerWorkspace ws;
  WarmStartLibrary lib;
  for (const auto& p : split.test) {
    const auto tokens = model.tokenizer().encode(p.source, true);
    auto state = run_prompt(model, tokens, pool, ws);
    ASSERT_TRUE(state.ok());
    auto summary = summarize_prefix(model.hparams(), *state, fit.summary);
    ASSERT_TRUE(summary.ok());
    lib.insert({tokens, embed_prompt(model, tokens), std::move(*summary)});
  }
  ASSERT_TRUE(lib.save(dir + "/library").ok());
  WarmStartConfig wc;
  wc.maps_path = dir + "/maps.safetensors";
  wc.library_dir = dir + "/library";
  wc.threshold = 0.9;
  auto service = WarmStartService::open(model, wc);
  ASSERT_TRUE(service.ok()) << service.error().message;

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
  const auto warm = run(model, reqs, std::shared_ptr<WarmStartService>(std::move(*service)), &warm_stats);
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
  // A hit with max_tokens 1 never prefills: fewer prompt tokens computed than the cold run.
  EXPECT_LT(warm_stats.prompt_tokens_computed, cold_stats.prompt_tokens_computed);
  std::printf("[warm-start gate] %zu requests: %d hits, %d misses; tokens 2.. bitwise equal to forced-cold\n",
              reqs.size(), hits, misses);
}

}  // namespace
}  // namespace pagoda
