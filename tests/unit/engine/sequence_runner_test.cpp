#include "engine/sequence_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/engine.h"
#include "test_models.h"
#include "util/rng.h"

namespace pagoda {

// A prompt longer than kPrefillChunk runs in chunks (bounded workspace) and gives bitwise the last logits of a single
// all-logits call over the same tokens.
TEST(SequenceRunner, ChunkedPrefillGivesTheBitsOfOneCall) {
  auto m = Model::load(std::string(PAGODA_SHARED_DIR) + "/models/quant/synth-q-Q4_K_M.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const int64_t n = 2 * static_cast<int64_t>(SequenceRunner::kPrefillChunk) + 77;
  std::vector<int32_t> prompt(n);
  Rng rng(3);
  for (auto& t : prompt) t = static_cast<int32_t>(3 + rng.next_u64() % 500);
  ThreadPool pool(2);
  SequenceRunner chunked(**m, pool, 2048), whole(**m, pool, 2048);
  auto last = chunked.eval(prompt);
  ASSERT_TRUE(last.ok()) << last.error().message;
  const std::vector<float> last_logits(last->begin(), last->end());
  EXPECT_EQ(chunked.length(), n);
  auto all = whole.eval(prompt, /*all_logits=*/true);
  ASSERT_TRUE(all.ok());
  const size_t V = last_logits.size();
  ASSERT_EQ(all->size(), V * n);
  EXPECT_EQ(0, std::memcmp(last_logits.data(), all->data() + (n - 1) * V, V * sizeof(float)));
}

// generate() (pagoda run) samples with the penalties as the engine (pagoda serve) does: the same request gives the
// same tokens on both paths, greedy and seeded; and the penalties do change what a plain run would give.
TEST(SequenceRunner, GenerateAppliesThePenaltiesAsTheEngineDoes) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 403, 407};
  auto engine_tokens = [&](const SamplingParams& sp, uint64_t seed) {
    EngineConfig config;
    config.num_blocks = 64;
    config.num_threads = 2;
    auto engine = Engine::create(stories260k(), config);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error().message);
    GenerationRequest r;
    r.id = "penalized";
    r.prompt = prompt;
    r.max_tokens = 48;
    r.sampling = sp;
    r.seed = seed;
    auto stream = (*engine)->submit(r);
    (*engine)->run_until_idle();
    std::vector<int32_t> ids;
    StreamEvent ev;
    while (stream->try_next(&ev))
      if (ev.kind == StreamEvent::Kind::kToken) ids.push_back(ev.token);
    return ids;
  };
  auto run_tokens = [&](const SamplingParams& sp, uint64_t seed) {
    ThreadPool pool(2);
    SequenceRunner runner(stories260k(), pool, 256);
    GenerateOptions o;
    o.max_new_tokens = 48;
    o.sampling = sp;
    o.sampling.seed = seed;
    auto ids = generate(runner, prompt, o, nullptr);
    EXPECT_TRUE(ids.ok()) << ids.error().message;
    return ids.ok() ? *ids : std::vector<int32_t>{};
  };
  SamplingParams plain;
  plain.temperature = 0.0f;
  SamplingParams penalized = plain;
  penalized.repetition_penalty = 1.3f;
  penalized.presence_penalty = 0.4f;
  penalized.frequency_penalty = 0.3f;
  const auto greedy = run_tokens(plain, 1), greedy_penalized = run_tokens(penalized, 1);
  ASSERT_FALSE(greedy_penalized.empty());
  EXPECT_NE(greedy_penalized, greedy);
  EXPECT_EQ(greedy_penalized, engine_tokens(penalized, 1));
  SamplingParams sampled = penalized;
  sampled.temperature = 0.9f;
  sampled.min_p = 0.05f;
  const auto a = run_tokens(sampled, 11);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, engine_tokens(sampled, 11));
}

// GenerateOptions::stop ends the generation after the token being sampled when it is set: the tokens so far are
// the unstopped generation's first ones.
TEST(SequenceRunner, GenerateEndsWhenTheStopFlagIsSet) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  ThreadPool pool(2);
  GenerateOptions o;
  o.max_new_tokens = 40;
  o.sampling.temperature = 0.0f;
  SequenceRunner whole_runner(stories260k(), pool, 256);
  auto whole = generate(whole_runner, prompt, o, nullptr);
  ASSERT_TRUE(whole.ok());
  ASSERT_GT(whole->size(), 8u);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  SequenceRunner runner(stories260k(), pool, 256);
  size_t seen = 0;
  auto ids = generate(runner, prompt, o, [&](int32_t) {
    if (++seen == 6) stop.store(true);
  });
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 6u);
  EXPECT_TRUE(std::equal(ids->begin(), ids->end(), whole->begin()));
}

}  // namespace pagoda
