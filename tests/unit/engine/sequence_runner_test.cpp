#include "engine/sequence_runner.h"

#include <gtest/gtest.h>

#include <cstring>

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

}  // namespace pagoda
