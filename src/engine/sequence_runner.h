// Runs one sequence through the model with its own contiguous KV cache: the plain single-sequence path.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "model/transformer.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace pagoda {

class SequenceRunner {
 public:
  static constexpr size_t kPrefillChunk = 512;
  // n_ctx: KV capacity in tokens (0 = the model's training context); kv_dtype: the K/V element type. Check the
  // capacity's size first (ContiguousKvCache::check_size); a head size the type cannot store is an error of eval.
  SequenceRunner(const Model& model, ThreadPool& pool, int64_t n_ctx = 0, KvDtype kv_dtype = kDefaultKvDtype);
  KvDtype kv_dtype() const { return kv_.dtype(); }

  int64_t n_ctx() const { return kv_.capacity(); }
  int64_t length() const { return kv_.length(); }
  void reset() { kv_.clear(); }
  const Model& model() const { return model_; }

  // Feeds tokens and returns the logits of the last one ([n_vocab]), or of all ([T, n_vocab]) if all_logits.
  // Without all_logits, more than kPrefillChunk tokens run as several forward calls.
  Result<std::span<const float>> eval(std::span<const int32_t> tokens, bool all_logits = false);

 private:
  const Model& model_;
  ThreadPool& pool_;
  ContiguousKvCache kv_;
  TransformerWorkspace ws_;
  std::vector<float> logits_;
};

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  SamplingParams sampling;
};

// Prefills the prompt, then samples until an end-of-generation token, max_new_tokens or the context end.
// on_token is called for each generated token as soon as it is sampled (end-of-generation tokens included).
Result<std::vector<int32_t>> generate(SequenceRunner& runner, std::span<const int32_t> prompt,
                                      const GenerateOptions& options, const std::function<void(int32_t)>& on_token);

}  // namespace pagoda
