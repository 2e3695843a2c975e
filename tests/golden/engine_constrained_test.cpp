// Gate 0 for structured outputs: a constrained greedy request gives the same tokens alone (the single-sequence
// path with the grammar's mask applied by hand) and inside a busy engine (mixed with unconstrained requests, chunked
// prefill, preemption), and whatever it completes is a sentence of its grammar.
#include <gtest/gtest.h>

#include <limits>

#include "api/output_constraint.h"
#include "engine/engine.h"
#include "engine_reference.h"
#include "golden_shared.h"
#include "grammar/json_schema.h"
#include "model/model.h"
#include "util/rng.h"

namespace pagoda {
namespace {

class EngineConstrained : public ::testing::Test {
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

  static std::shared_ptr<const grammar::CompiledGrammar> compile(const std::string& body) {
    auto c = read_output_constraint(nlohmann::ordered_json::parse(body), model_->tokenizer());
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
    return c.ok() ? *c : nullptr;
  }

  // The reference: the single-sequence path, the grammar's mask applied to its logits, argmax, the matcher moved
  // by the token's text; ends where the engine ends (EOS, the grammar complete, max_tokens).
  static std::vector<int32_t> constrained_alone(const GenerationRequest& r) {
    ThreadPool pool(2);
    SequenceRunner runner(*model_, pool, 512, KvDtype::kF32);
    const auto& m = r.grammar->matcher();
    grammar::MatcherState state = m.initial();
    std::vector<int32_t> ids;
    auto logits = runner.eval(r.prompt);
    while (logits.ok() && static_cast<int64_t>(ids.size()) < r.max_tokens) {
      std::vector<float> masked(logits->begin(), logits->end());
      const grammar::TokenMask mask = r.grammar->trie().mask(m, state);  // uncached: computed afresh
      for (size_t i = 0; i < masked.size(); ++i)
        if (!mask.allowed(static_cast<int32_t>(i))) masked[i] = -std::numeric_limits<float>::infinity();
      const int32_t next = Sampler::argmax(masked);
      ids.push_back(next);
      if (model_->tokenizer().is_end_of_generation(next)) break;
      state = m.advance(state, grammar::grammar_piece(model_->tokenizer(), next));
      EXPECT_FALSE(state.dead());
      if (state.must_end()) break;
      logits = runner.eval(std::span<const int32_t>(&next, 1));
    }
    return ids;
  }

  static std::string text_of(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids)
      if (!model_->tokenizer().is_end_of_generation(id)) s += model_->tokenizer().piece(id);
    return s;
  }

  static Model* model_;
};

Model* EngineConstrained::model_ = nullptr;

EngineConfig small_config(int64_t num_blocks, bool parallel_masks = true) {
  EngineConfig c;
  c.kv_cache_dtype = KvDtype::kF32;
  c.block_size = 16;
  c.num_blocks = num_blocks;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 64;
  c.num_threads = 2;
  c.watermark_blocks = 0;
  c.model_id = "stories260K";
  c.parallel_masks = parallel_masks;
  return c;
}

TEST_F(EngineConstrained, GreedyConstrainedMatchesAloneInABusyEngine) {
  const std::vector<std::string> constraints = {
      R"({"response_format": {"type": "json_object"}})",
      R"({"json_schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
          "age": {"type": "integer", "minimum": 0, "maximum": 120}, "pets": {"type": "array",
          "items": {"enum": ["dog", "cat"]}, "maxItems": 3}}, "required": ["name", "age", "pets"]}})",
      R"({"guided_choice": ["Lily", "Tom", "a big red ball"]})",
      R"({"grammar": "root ::= [A-Z] [a-z]{2,6} (\" \" [a-z]+){1,4} \".\""})",
  };
  Rng rng(17);
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r;
    r.id = std::to_string(i);
    r.prompt = model_->tokenizer().encode(i % 2 ? "Once upon a time, Lily" : "The dog said", true, true);
    for (int t = 0; t < i * 5; ++t) r.prompt.push_back(static_cast<int32_t>(3 + rng.next_u64() % 509));
    r.max_tokens = 48;
    r.sampling.temperature = 0.0f;
    if (i % 3 != 2) r.grammar = compile(constraints[static_cast<size_t>(i) % constraints.size()]);
    reqs.push_back(std::move(r));
  }
  // A pool small enough that running sequences preempt each other.
  auto engine = Engine::create(*model_, small_config(24));
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) streams.push_back((*engine)->submit(r));
  (*engine)->run_until_idle();
  EXPECT_GE((*engine)->stats().preemptions, 1);
  int constrained = 0, completed = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    SequenceOutput got;
    drain_stream(*streams[i], got);
    ASSERT_NE(got.finish, FinishReason::kError) << i << ": " << got.error;
    if (!reqs[i].grammar) continue;
    ++constrained;
    EXPECT_EQ(got.ids, constrained_alone(reqs[i])) << "request " << i;
    const std::string text = text_of(got.ids);
    if (got.finish == FinishReason::kStop) {
      ++completed;
      EXPECT_TRUE(reqs[i].grammar->matcher().accepts(text)) << i << ": " << text;
    } else {
      EXPECT_FALSE(reqs[i].grammar->matcher().advance(reqs[i].grammar->matcher().initial(), text).dead())
          << i << ": " << text;
    }
  }
  EXPECT_EQ(constrained, 8);
  EXPECT_GE(completed, 4) << "the choice and the short grammar finish within 48 tokens";
}

TEST_F(EngineConstrained, MasksComputedDuringTheForwardPassGiveTheSameTokens) {
  // The same grammar under two texts (a comment differs), so each engine starts from a cold mask cache.
  const std::string schema = R"({"type": "object", "properties": {"who": {"type": "string", "maxLength": 12},
      "n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["who", "n"]})";
  auto gbnf = grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
  ASSERT_TRUE(gbnf.ok());
  std::vector<std::vector<int32_t>> outputs[2];
  int64_t prefetched[2] = {0, 0};
  for (int parallel = 0; parallel < 2; ++parallel) {
    const std::string text = *gbnf + "# masks " + (parallel ? "parallel" : "inline") + " (engine_constrained_test)\n";
    auto g = grammar::compile_grammar(text, model_->tokenizer());
    ASSERT_TRUE(g.ok()) << g.error().message;
    ASSERT_EQ((*g)->cache().misses(), 0u) << "a fresh grammar";
    auto engine = Engine::create(*model_, small_config(256, parallel == 1));
    ASSERT_TRUE(engine.ok());
    std::vector<GenerationRequest> reqs;
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < 6; ++i) {
      GenerationRequest r;
      r.prompt = model_->tokenizer().encode(i % 2 ? "Lily and Tom" : "Once upon a time", true, true);
      r.prompt.push_back(static_cast<int32_t>(10 + i));
      r.max_tokens = 40;
      r.sampling.temperature = 0.0f;
      r.grammar = *g;
      reqs.push_back(r);
      streams.push_back((*engine)->submit(r));
    }
    (*engine)->run_until_idle();
    prefetched[parallel] = (*engine)->stats().masks_prefetched;
    for (size_t i = 0; i < reqs.size(); ++i) {
      SequenceOutput got;
      drain_stream(*streams[i], got);
      ASSERT_NE(got.finish, FinishReason::kError) << got.error;
      EXPECT_EQ(got.ids, constrained_alone(reqs[i])) << "request " << i << (parallel ? " (parallel)" : " (inline)");
      outputs[parallel].push_back(got.ids);
    }
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(prefetched[0], 0);
  EXPECT_GT(prefetched[1], 5) << "states met for the first time are computed during the forward pass";
}

TEST_F(EngineConstrained, IgnoreEosNeverSamplesTheEndButTheGrammarStillEnds) {
  // Plain story text, as long as the model likes: it may end anywhere. EOS favoured by a logit bias: picked as
  // soon as the grammar allows it without ignore_eos; with it, never.
  auto g = compile(R"({"grammar": "root ::= [A-Za-z] [A-Za-z ,.!'\\n]*"})");
  ASSERT_TRUE(g);
  SequenceOutput plain, ignoring;
  for (bool ignore : {false, true}) {
    GenerationRequest r;
    r.prompt = model_->tokenizer().encode("Once upon a time, there was a little girl named Lily.", true, true);
    r.max_tokens = 60;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = ignore;
    r.sampling.logit_bias = {{*model_->tokenizer().eos(), 30.0f}};
    r.grammar = g;
    auto engine = Engine::create(*model_, small_config(256));
    ASSERT_TRUE(engine.ok());
    auto stream = (*engine)->submit(r);
    (*engine)->run_until_idle();
    drain_stream(*stream, ignore ? ignoring : plain);
  }
  ASSERT_NE(plain.finish, FinishReason::kError) << plain.error;
  ASSERT_NE(ignoring.finish, FinishReason::kError) << ignoring.error;
  ASSERT_FALSE(plain.ids.empty());
  ASSERT_TRUE(model_->tokenizer().is_end_of_generation(plain.ids.back()))
      << "the case this test is about: EOS early; got " << static_cast<int>(plain.finish) << " " << plain.ids.size() << ": " << text_of(plain.ids);
  for (int32_t id : ignoring.ids) EXPECT_FALSE(model_->tokenizer().is_end_of_generation(id));
  EXPECT_GT(ignoring.ids.size(), plain.ids.size());
  const std::string text = text_of(ignoring.ids);
  if (ignoring.finish == FinishReason::kStop) {
    EXPECT_TRUE(g->matcher().advance(g->matcher().initial(), text).must_end()) << text;
  } else {
    EXPECT_EQ(ignoring.finish, FinishReason::kLength);
    EXPECT_EQ(ignoring.ids.size(), 60u);
  }
}

TEST_F(EngineConstrained, SampledChoicesStayInTheGrammarAndTheSeedDecides) {
  GenerationRequest r;
  r.prompt = model_->tokenizer().encode("Once upon a time", true, true);
  r.max_tokens = 64;
  r.sampling.temperature = 1.2f;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0f;
  r.seed = 5;
  r.n = 4;
  r.grammar = compile(R"({"json_schema": {"type": "object", "properties": {"ok": {"type": "boolean"},
      "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["ok", "n"]}})");
  auto run = [&] {
    auto engine = Engine::create(*model_, small_config(256));
    EXPECT_TRUE(engine.ok());
    auto stream = (*engine)->submit(r);
    (*engine)->run_until_idle();
    std::vector<SequenceOutput> choices(4);
    StreamEvent ev;
    while (stream->try_next(&ev)) {
      if (ev.kind == StreamEvent::Kind::kFinished) {
        choices[ev.index].finish = ev.finish;
      } else {
        choices[ev.index].ids.push_back(ev.token);
      }
    }
    return choices;
  };
  const auto a = run(), b = run();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids);
    ASSERT_EQ(a[i].finish, FinishReason::kStop) << text_of(a[i].ids);
    const auto j = nlohmann::json::parse(text_of(a[i].ids));
    EXPECT_TRUE(j["ok"].is_boolean());
    EXPECT_TRUE(j["n"].is_number_integer());
  }
}

}  // namespace
}  // namespace pagoda
