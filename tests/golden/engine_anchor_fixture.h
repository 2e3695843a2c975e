// Shared by the engine's anchor tests: the tiny model, anchor-shaped token lists, an engine configuration, and
// bitwise comparison with the plain single-sequence path.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_reference.h"
#include "golden_shared.h"
#include "model/model.h"
#include "util/rng.h"

namespace pagoda {

using Output = SequenceOutput;

class EngineAnchor : public ::testing::Test {
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

  static std::vector<int32_t> random_tokens(Rng& rng, int n) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(3 + rng.next_u64() % 509));
    return t;
  }
  // Anchor tokens as the verifier produces them: BOS, then the text's tokens.
  static std::vector<int32_t> anchor_tokens(uint64_t seed, int n) {
    Rng rng(seed);
    std::vector<int32_t> t{1};
    auto rest = random_tokens(rng, n - 1);
    t.insert(t.end(), rest.begin(), rest.end());
    return t;
  }

  static Output run_alone(const std::vector<int32_t>& prompt, int64_t max_tokens) {
    return greedy_single_sequence(*model_, prompt, max_tokens);
  }
  static void drain(RequestStream& stream, Output& o) { drain_stream(stream, o); }

  static EngineConfig config(int32_t block_size, int64_t num_blocks, bool caching) {
    EngineConfig c;
    c.kv_cache_dtype = KvDtype::kF32;  // as greedy_single_sequence
    c.block_size = block_size;
    c.num_blocks = num_blocks;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 64;
    c.num_threads = 2;
    c.watermark_blocks = 0;
    c.model_id = "stories260K";
    c.enable_prefix_caching = caching;
    c.anchor_max_pinned_frac = 0.5;
    return c;
  }

  static Result<AnchorActivation> activate(Engine& e, const std::string& digest, const std::vector<int32_t>& tokens) {
    auto f = e.activate_anchor(digest, tokens);
    e.step();
    return f.get();
  }

  static void expect_bitwise(const Output& got, const Output& want, const std::string& what) {
    ASSERT_NE(got.finish, FinishReason::kError) << what << ": " << got.error;
    ASSERT_EQ(got.ids, want.ids) << what;
    const size_t n_vocab = model_->hparams().n_vocab;
    for (size_t s = 0; s < got.ids.size(); ++s)
      ASSERT_EQ(0, std::memcmp(got.logits[s].data(), want.logits[s].data(), n_vocab * sizeof(float)))
          << what << " step " << s << ": logits differ from the plain prompt";
  }

  static Model* model_;
};
inline Model* EngineAnchor::model_ = nullptr;

}  // namespace pagoda
