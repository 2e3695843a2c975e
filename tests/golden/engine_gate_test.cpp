// Gate 0 of the paged engine: many concurrent requests - mixed lengths, shared prefixes, staggered arrival,
// cancellations, chunked prefill, preemption, block sizes 1 / 16 / 32 - produce greedy tokens, and logits
// behind them, bitwise identical to running each request alone through the single-sequence path.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "engine/engine.h"
#include "engine_reference.h"
#include "golden_shared.h"
#include "model/model.h"
#include "util/rng.h"

namespace pagoda {
namespace {

using Reference = SequenceOutput;
using Collected = SequenceOutput;

class EngineGate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::load(kShared + "/models/stories260K.gguf");
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // 20 requests: a BOS, then either a shared 48-token prefix or not, then a random tail; 3 to ~150 tokens.
  static std::vector<GenerationRequest> make_requests(uint64_t seed) {
    Rng rng(seed);
    auto random_token = [&] { return static_cast<int32_t>(3 + rng.next_u64() % 509); };
    std::vector<int32_t> shared_prefix;
    for (int i = 0; i < 48; ++i) shared_prefix.push_back(random_token());
    std::vector<GenerationRequest> out;
    for (int i = 0; i < 20; ++i) {
      GenerationRequest r;
      r.id = std::to_string(i);
      r.prompt.push_back(1);
      if (i % 3 == 0) r.prompt.insert(r.prompt.end(), shared_prefix.begin(), shared_prefix.end());
      const int tail = (i % 4 == 1) ? 2 + static_cast<int>(rng.next_u64() % 6) : static_cast<int>(rng.next_u64() % 100);
      for (int t = 0; t < tail; ++t) r.prompt.push_back(random_token());
      r.max_tokens = 5 + static_cast<int64_t>(rng.next_u64() % 40);
      r.sampling.temperature = 0.0f;
      r.return_logits = true;
      out.push_back(std::move(r));
    }
    return out;
  }

  static Reference run_alone(const GenerationRequest& r) {
    return greedy_single_sequence(*model_, r.prompt, r.max_tokens, 512, kv_dtype_);
  }

  static void drain(RequestStream& stream, Collected& c) { drain_stream(stream, c); }

  // Runs the requests with staggered arrival and two cancellations; checks the block manager after every step.
  static std::vector<Collected> run_engine(const EngineConfig& config, const std::vector<GenerationRequest>& reqs,
                                           EngineStats* stats_out) {
    auto engine = Engine::create(*model_, config);
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error().message);
    if (!engine.ok()) return {};
    Engine& e = **engine;
    std::vector<std::shared_ptr<RequestStream>> streams(reqs.size());
    std::vector<Collected> got(reqs.size());
    size_t submitted = 0;
    auto submit_until = [&](size_t n) {
      for (; submitted < n && submitted < reqs.size(); ++submitted) streams[submitted] = e.submit(reqs[submitted]);
    };
    submit_until(8);
    for (int step = 0;; ++step) {
      if (step == 3) submit_until(14);
      if (step == 7) submit_until(reqs.size());
      if (step == 5) streams[2]->cancel();
      if (step == 12) streams[11]->cancel();
      const bool worked = e.step();
      Status inv = e.check_invariants();
      EXPECT_TRUE(inv.ok()) << "after step " << step << ": " << (inv.ok() ? "" : inv.error().message);
      for (size_t i = 0; i < submitted; ++i) drain(*streams[i], got[i]);
      if (!worked && submitted == reqs.size()) break;
      if (step > 100000) {
        ADD_FAILURE() << "engine did not finish";
        break;
      }
    }
    *stats_out = e.stats();
    return got;
  }

  static void expect_matches_reference(const std::vector<GenerationRequest>& reqs, const std::vector<Collected>& got) {
    const size_t n_vocab = model_->hparams().n_vocab;
    int completed = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const Reference ref = run_alone(reqs[i]);
      const Collected& c = got[i];
      ASSERT_NE(c.finish, FinishReason::kError) << "request " << i << ": " << c.error;
      ASSERT_NE(c.finish, FinishReason::kNone) << "request " << i << " never finished";
      if (c.finish == FinishReason::kCancelled) {
        ASSERT_LE(c.ids.size(), ref.ids.size()) << "request " << i;
      } else {
        ++completed;
        ASSERT_EQ(c.ids, ref.ids) << "request " << i;
      }
      for (size_t s = 0; s < c.ids.size(); ++s) {
        ASSERT_EQ(c.ids[s], ref.ids[s]) << "request " << i << " step " << s;
        ASSERT_EQ(c.logits[s].size(), n_vocab);
        ASSERT_EQ(0, std::memcmp(c.logits[s].data(), ref.logits[s].data(), n_vocab * sizeof(float)))
            << "request " << i << " step " << s << ": logits differ from the single-sequence path";
      }
    }
    EXPECT_GE(completed, 18);
  }

  static Model* model_;

 public:
  static KvDtype kv_dtype_;  // of the engine and of the single-sequence reference alike
};
Model* EngineGate::model_ = nullptr;
KvDtype EngineGate::kv_dtype_ = KvDtype::kF32;

EngineConfig gate_config(int32_t block_size, int64_t num_blocks) {
  EngineConfig c;
  c.kv_cache_dtype = EngineGate::kv_dtype_;
  c.block_size = block_size;
  c.num_blocks = num_blocks;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 64;  // long prompts are prefilled in several chunks
  c.num_threads = 2;
  c.watermark_blocks = 0;
  c.model_id = "stories260K";
  return c;
}

class EngineGateBlockSize : public EngineGate, public ::testing::WithParamInterface<int32_t> {};

TEST_P(EngineGateBlockSize, ConcurrentRequestsMatchSingleSequenceBitwise) {
  const int32_t bs = GetParam();
  const auto reqs = make_requests(100 + bs);
  EngineStats st;
  const auto got = run_engine(gate_config(bs, 8192 / bs), reqs, &st);
  expect_matches_reference(reqs, got);
  EXPECT_EQ(st.blocks.used_blocks, 0) << "every block is released once all requests end";
  EXPECT_LE(st.peak_seq_slack_slots, bs) << "KV waste: at most one block per sequence";
  EXPECT_GT(st.peak_seq_slack_slots, 0);
  EXPECT_EQ(st.running + st.waiting, 0);
  EXPECT_GT(st.blocks.prefix_hit_tokens, 0) << "the shared prefix is served from the cache";
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, EngineGateBlockSize, ::testing::Values(1, 16, 32));

// Gate 0 with quantized weights (integer dot products, quantized activations): the same bitwise agreement with the
// single-sequence path, at every block size. Two files cover Q4_0, Q8_0, F16, Q4_K and Q6_K; every other type's
// batch invariance is tested at the matmul (tests/unit/kernels/quant_dot_test.cpp).
class EngineGateQuantized : public EngineGate,
                            public ::testing::WithParamInterface<std::tuple<const char*, int32_t>> {};

TEST_P(EngineGateQuantized, ConcurrentRequestsMatchSingleSequenceBitwise) {
  const auto [name, bs] = GetParam();
  auto quantized = Model::load(kShared + "/models/quant/" + name + ".gguf");
  ASSERT_TRUE(quantized.ok()) << quantized.error().message;
  // The fixture's helpers use model_: point it at the quantized model for this test.
  struct Swap {
    Model* saved;
    ~Swap() { model_ = saved; }
  } restore{model_};
  model_ = quantized->get();
  const auto reqs = make_requests(300 + bs);
  EngineStats st;
  const auto got = run_engine(gate_config(bs, 8192 / bs), reqs, &st);
  expect_matches_reference(reqs, got);
  EXPECT_EQ(st.blocks.used_blocks, 0);
}

INSTANTIATE_TEST_SUITE_P(ModelsAndBlockSizes, EngineGateQuantized,
                         ::testing::Combine(::testing::Values("stories260K-Q4_0", "synth-q-Q4_K_M"),
                                            ::testing::Values(1, 16, 32)),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param);
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n + "_bs" + std::to_string(std::get<1>(info.param));
                         });

// Gate 0 in every KV cache type: the stored values differ from f32, but the engine (batches, chunked prefill, prefix
// hits, block sizes 1 / 16 / 32) still gives the single-sequence path's bits in the same type. stories260K's head
// size (8) takes the kernels' partial-vector loads; synth-q's (32) the full ones and Q8_0's blocks.
class EngineGateKvDtype : public EngineGate,
                          public ::testing::WithParamInterface<std::tuple<const char*, KvDtype, int32_t>> {};

TEST_P(EngineGateKvDtype, ConcurrentRequestsMatchSingleSequenceBitwise) {
  const auto [name, dtype, bs] = GetParam();
  auto m = Model::load(kShared + "/models/" + name + ".gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  struct Swap {
    Model* saved;
    ~Swap() {
      model_ = saved;
      kv_dtype_ = KvDtype::kF32;
    }
  } restore{model_};
  model_ = m->get();
  kv_dtype_ = dtype;
  const auto reqs = make_requests(500 + bs);
  EngineStats st;
  const auto got = run_engine(gate_config(bs, 8192 / bs), reqs, &st);
  expect_matches_reference(reqs, got);
  EXPECT_EQ(st.blocks.used_blocks, 0);
  EXPECT_GT(st.blocks.prefix_hit_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(
    ModelsTypesAndBlockSizes, EngineGateKvDtype,
    ::testing::Values(std::make_tuple("stories260K", KvDtype::kF16, 1), std::make_tuple("stories260K", KvDtype::kF16, 16),
                      std::make_tuple("stories260K", KvDtype::kBF16, 32),
                      std::make_tuple("quant/synth-q-Q4_K_M", KvDtype::kF16, 16),
                      std::make_tuple("quant/synth-q-Q4_K_M", KvDtype::kBF16, 1),
                      std::make_tuple("quant/synth-q-Q4_K_M", KvDtype::kQ8_0, 1),
                      std::make_tuple("quant/synth-q-Q4_K_M", KvDtype::kQ8_0, 16),
                      std::make_tuple("quant/synth-q-Q4_K_M", KvDtype::kQ8_0, 32)),
    [](const auto& info) {
      std::string n = std::get<0>(info.param);
      for (char& ch : n)
        if (ch == '-' || ch == '/') ch = '_';
      return n + "_" + kv_dtype_name(std::get<1>(info.param)) + "_bs" + std::to_string(std::get<2>(info.param));
    });

// Requests sharing a 100-token prompt prefix hold the same physical blocks once the prefix cache has them, so their
// decode steps run as cascades (the shared key tiles read once for all of them): still the single-sequence bits,
// tokens and logits, at block sizes 1, 16 and 32.
TEST_F(EngineGate, SharedPrefixDecodeCascadesMatchSingleSequence) {
  for (int32_t bs : {1, 16, 32}) {
    Rng rng(40 + bs);
    std::vector<int32_t> prefix = {1};
    for (int i = 0; i < 100; ++i) prefix.push_back(static_cast<int32_t>(3 + rng.next_u64() % 509));
    std::vector<GenerationRequest> reqs;
    for (int i = 0; i < 8; ++i) {
      GenerationRequest r;
      r.id = std::to_string(i);
      r.prompt = prefix;
      for (int t = 0; t < 1 + i % 5; ++t) r.prompt.push_back(static_cast<int32_t>(3 + rng.next_u64() % 509));
      r.max_tokens = 20 + i;
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      r.return_logits = true;
      reqs.push_back(std::move(r));
    }
    auto engine = Engine::create(*model_, gate_config(bs, 8192 / bs));
    ASSERT_TRUE(engine.ok());
    std::vector<std::shared_ptr<RequestStream>> streams;
    streams.push_back((*engine)->submit(reqs[0]));
    for (int i = 0; i < 3; ++i) (*engine)->step();  // the first request's prompt blocks enter the prefix cache
    for (size_t i = 1; i < reqs.size(); ++i) streams.push_back((*engine)->submit(reqs[i]));
    (*engine)->run_until_idle();
    EXPECT_GT((*engine)->stats().blocks.prefix_hit_tokens, 0) << "block size " << bs;
    const size_t n_vocab = model_->hparams().n_vocab;
    for (size_t i = 0; i < reqs.size(); ++i) {
      Collected c;
      drain(*streams[i], c);
      const Reference ref = greedy_single_sequence(*model_, reqs[i].prompt, reqs[i].max_tokens, 512, kv_dtype_);
      ASSERT_EQ(c.ids.size(), static_cast<size_t>(reqs[i].max_tokens)) << "request " << i;
      for (size_t s = 0; s < c.ids.size() && s < ref.ids.size(); ++s) {
        ASSERT_EQ(c.ids[s], ref.ids[s]) << "block size " << bs << " request " << i << " step " << s;
        ASSERT_EQ(0, std::memcmp(c.logits[s].data(), ref.logits[s].data(), n_vocab * sizeof(float)))
            << "block size " << bs << " request " << i << " step " << s;
      }
    }
  }
}

TEST_F(EngineGate, SmallPoolPreemptsRepeatedlyAndStillMatches) {
  for (int32_t bs : {1, 16}) {
    const auto reqs = make_requests(7 + bs);
    EngineStats st;
    // Room for ~3 of the longest sequences at once: running decodes keep evicting each other.
    const int64_t blocks = (bs == 1) ? 400 : 28;
    const auto got = run_engine(gate_config(bs, blocks), reqs, &st);
    expect_matches_reference(reqs, got);
    EXPECT_GE(st.preemptions, 3) << "block size " << bs;
    EXPECT_EQ(st.blocks.used_blocks, 0);
  }
}

// Gate 0 under tenant sharing: two tenants with limits on running sequences and KV blocks (preemption within a
// tenant), a third without limits, long prompts chunked by the long-prefill threshold, and an aging horizon short
// enough that waiting sequences become due (they then hold the pool): the same tokens and logits, bitwise.
TEST_F(EngineGate, TenantLimitsAndAgingKeepEveryTokenAndLogit) {
  for (int32_t bs : {1, 16}) {
    auto reqs = make_requests(41 + bs);
    for (size_t i = 0; i < reqs.size(); ++i) reqs[i].tenant = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "c";
    EngineConfig c = gate_config(bs, bs == 1 ? 900 : 60);
    c.tenants["a"].max_running = 2;
    // b may hold just its longest sequence at full length: its sequences keep preempting each other.
    int32_t longest_b = 0;
    for (const auto& r : reqs)
      if (r.tenant == "b")
        longest_b = std::max<int32_t>(longest_b, static_cast<int32_t>((r.prompt.size() + r.max_tokens + bs) / bs));
    c.tenants["b"].max_kv_blocks = longest_b;
    c.long_prefill_token_threshold = 24;
    c.aging_horizon_s = 1e-6;
    EngineStats st;
    const auto got = run_engine(c, reqs, &st);
    expect_matches_reference(reqs, got);
    EXPECT_EQ(st.blocks.used_blocks, 0);
    EXPECT_GE(st.preemptions, 1) << "block size " << bs << ": tenant b's block limit preempts within b";
  }
}

TEST_F(EngineGate, ForkedChoicesShareThePromptAndMatch) {
  auto reqs = make_requests(3);
  GenerationRequest r = reqs[4];
  r.n = 3;
  EngineConfig c = gate_config(16, 256);
  auto engine = Engine::create(*model_, c);
  ASSERT_TRUE(engine.ok());
  auto stream = (*engine)->submit(r);
  int32_t peak_running = 0;
  while ((*engine)->step()) {
    peak_running = std::max(peak_running, (*engine)->stats().running);
    ASSERT_TRUE((*engine)->check_invariants().ok());
  }
  EXPECT_EQ(peak_running, 3) << "the prompt is prefilled once, then forked into 3 running choices";
  EXPECT_EQ((*engine)->stats().prompt_tokens_computed, static_cast<int64_t>(r.prompt.size()));
  std::vector<Collected> choices(3);
  StreamEvent ev;
  while (stream->try_next(&ev)) {
    if (ev.kind == StreamEvent::Kind::kFinished)
      choices[ev.index].finish = ev.finish;
    else
      choices[ev.index].ids.push_back(ev.token);
  }
  const Reference ref = run_alone(r);
  for (const auto& ch : choices) {
    EXPECT_EQ(ch.ids, ref.ids);
    EXPECT_NE(ch.finish, FinishReason::kNone);
  }
  EXPECT_TRUE((*engine)->check_invariants().ok());
  EXPECT_EQ((*engine)->stats().blocks.used_blocks, 0);
}

// Several prompts of one OpenAI completion request share one stream: prompt p's choices are p * n + j, each
// matches its prompt run alone, a cancel of the stream ends them all, and every block comes back.
TEST_F(EngineGate, GroupOfPromptsOnOneStreamNumbersChoicesAndMatches) {
  auto reqs = make_requests(5);
  std::vector<GenerationRequest> group = {reqs[1], reqs[3], reqs[6]};
  for (auto& r : group) r.n = 2;
  auto engine = Engine::create(*model_, gate_config(16, 256));
  ASSERT_TRUE(engine.ok());
  auto stream = (*engine)->submit_group(group);
  while ((*engine)->step()) ASSERT_TRUE((*engine)->check_invariants().ok());
  std::vector<Collected> choices(6);
  StreamEvent ev;
  while (stream->try_next(&ev)) {
    ASSERT_GE(ev.index, 0);
    ASSERT_LT(ev.index, 6);
    if (ev.kind == StreamEvent::Kind::kFinished)
      choices[ev.index].finish = ev.finish;
    else
      choices[ev.index].ids.push_back(ev.token);
  }
  EXPECT_TRUE(stream->finished());
  for (int p = 0; p < 3; ++p) {
    const Reference ref = run_alone(group[p]);
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(choices[p * 2 + j].ids, ref.ids) << "prompt " << p << " choice " << j;
      EXPECT_NE(choices[p * 2 + j].finish, FinishReason::kNone);
    }
  }
  EXPECT_EQ((*engine)->stats().blocks.used_blocks, 0);

  // Cancelling the shared stream ends every prompt's choices.
  for (auto& r : group) r.max_tokens = 400, r.ignore_eos = true;
  auto cancelled = (*engine)->submit_group(group);
  for (int i = 0; i < 3; ++i) (*engine)->step();
  cancelled->cancel();
  while ((*engine)->step()) {
  }
  int finished = 0;
  while (cancelled->try_next(&ev))
    if (ev.kind == StreamEvent::Kind::kFinished) {
      ++finished;
      EXPECT_EQ(ev.finish, FinishReason::kCancelled) << "choice " << ev.index;
    }
  EXPECT_EQ(finished, 6);
  EXPECT_TRUE(cancelled->finished());
  EXPECT_EQ((*engine)->stats().blocks.used_blocks, 0);
}

TEST_F(EngineGate, SeededSamplingIgnoresTheRestOfTheBatch) {
  GenerationRequest r;
  r.id = "sampled";
  r.prompt = {1, 403, 407, 261, 378};
  r.max_tokens = 40;
  r.sampling.temperature = 0.9f;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0f;
  r.seed = 11;
  r.ignore_eos = true;
  auto ids_of = [](RequestStream& s) {
    std::vector<int32_t> ids;
    StreamEvent ev;
    while (s.try_next(&ev))
      if (ev.kind == StreamEvent::Kind::kToken) ids.push_back(ev.token);
    return ids;
  };
  auto alone = Engine::create(*model_, gate_config(16, 512));
  ASSERT_TRUE(alone.ok());
  auto s1 = (*alone)->submit(r);
  (*alone)->run_until_idle();
  auto busy = Engine::create(*model_, gate_config(16, 512));
  ASSERT_TRUE(busy.ok());
  auto others = make_requests(5);
  for (size_t i = 0; i < 6; ++i) (*busy)->submit(others[i]);
  auto s2 = (*busy)->submit(r);
  (*busy)->run_until_idle();
  const auto a = ids_of(*s1), b = ids_of(*s2);
  EXPECT_EQ(a.size(), 40u);
  EXPECT_EQ(a, b);
}

TEST_F(EngineGate, BackgroundThreadStreamsAndCancelsFromAnotherThread) {
  auto engine = Engine::create(*model_, gate_config(16, 512));
  ASSERT_TRUE(engine.ok());
  (*engine)->start();
  GenerationRequest endless;
  endless.prompt = {1, 403, 407};
  endless.max_tokens = 100000;
  endless.ignore_eos = true;
  GenerationRequest short_one;
  short_one.prompt = {1, 403, 407, 261, 378};
  short_one.max_tokens = 12;
  short_one.sampling.temperature = 0.0f;
  auto s_endless = (*engine)->submit(endless);
  auto s_short = (*engine)->submit(short_one);
  StreamEvent ev;
  int tokens = 0;
  while (tokens < 5 && s_endless->next(&ev))
    if (ev.kind == StreamEvent::Kind::kToken) ++tokens;
  s_endless->cancel();
  FinishReason last = FinishReason::kNone;
  while (s_endless->next(&ev))  // returns false once the choice has finished: no hang
    if (ev.kind == StreamEvent::Kind::kFinished) last = ev.finish;
  EXPECT_EQ(last, FinishReason::kCancelled);
  std::vector<int32_t> ids;
  while (s_short->next(&ev)) {
    if (ev.kind == StreamEvent::Kind::kToken) ids.push_back(ev.token);
    if (ev.kind == StreamEvent::Kind::kFinished) last = ev.finish;
  }
  EXPECT_EQ(last, FinishReason::kLength);
  EXPECT_EQ(ids, run_alone(short_one).ids);
  (*engine)->stop();
  EXPECT_TRUE((*engine)->check_invariants().ok());
  EXPECT_EQ((*engine)->stats().blocks.used_blocks, 0);
}

TEST_F(EngineGate, RequestThatCanNeverFitFailsAndOthersComplete) {
  EngineConfig c = gate_config(16, 8);  // 128 tokens
  auto engine = Engine::create(*model_, c);
  ASSERT_TRUE(engine.ok());
  GenerationRequest big;
  big.prompt.assign(200, 300);
  big.prompt[0] = 1;
  GenerationRequest small;
  small.prompt = {1, 403, 407};
  small.max_tokens = 4;
  small.sampling.temperature = 0.0f;
  auto sb = (*engine)->submit(big);
  auto ss = (*engine)->submit(small);
  (*engine)->run_until_idle();
  Collected cb, cs;
  drain(*sb, cb);
  drain(*ss, cs);
  EXPECT_EQ(cb.finish, FinishReason::kError);
  EXPECT_NE(cb.error.find("KV pool"), std::string::npos) << cb.error;
  EXPECT_EQ(cs.finish, FinishReason::kLength);
  EXPECT_EQ(cs.ids.size(), 4u);
}

}  // namespace
}  // namespace pagoda
