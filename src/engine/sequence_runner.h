// Runs one sequence through the model with its own contiguous KV cache: the plain single-sequence path.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "kv/kv_pool.h"
#include "model/device_forward.h"
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
  // The same path on `device` (--device cuda: the weights and the sequence's K/V in device memory, K/V as blocks of
  // a device pool that hold positions in order); Device::kCpu gives the constructor's runner. An error names what
  // the device does not take.
  static Result<std::unique_ptr<SequenceRunner>> create(const Model& model, ThreadPool& pool, int64_t n_ctx,
                                                        KvDtype kv_dtype, Device device);
  KvDtype kv_dtype() const { return kv_dtype_; }

  int64_t n_ctx() const { return n_ctx_; }
  int64_t length() const { return kv_ ? kv_->length() : device_length_; }
  void reset() { truncate(0); }
  // Forgets every token from position `length` on (length <= length()): the K/V before it stay, and the next eval
  // continues at that position.
  void truncate(int64_t length) {
    if (kv_) kv_->set_length(std::min(length, kv_->length()));
    device_length_ = std::min(length, device_length_);
  }
  const Model& model() const { return model_; }

  // Feeds tokens and returns the logits of the last one ([n_vocab]), or of all ([T, n_vocab]) if all_logits.
  // Without all_logits, more than kPrefillChunk tokens run as several forward calls.
  Result<std::span<const float>> eval(std::span<const int32_t> tokens, bool all_logits = false);

 private:
  SequenceRunner(const Model& model, ThreadPool& pool, int64_t n_ctx, KvDtype kv_dtype,
                 std::unique_ptr<DeviceForward> device, std::unique_ptr<KvPool> device_kv);
  Status eval_on_device(std::span<const int32_t> tokens, bool all_logits);

  const Model& model_;
  ThreadPool& pool_;
  int64_t n_ctx_;
  KvDtype kv_dtype_;
  std::unique_ptr<ContiguousKvCache> kv_;  // the CPU path's cache (null on a device)
  std::unique_ptr<DeviceForward> device_;  // the device path (null on the CPU), before its pool: outlives it
  std::unique_ptr<KvPool> device_kv_;      // [n_ctx / kDeviceBlock blocks] of the device; block b at table row b
  int64_t device_length_ = 0;
  std::vector<int32_t> d_table_;  // [num_blocks] = 0, 1, 2, ...: block b holds positions b * block_size ..
  SingleSequenceBatch d_batch_;
  TransformerWorkspace ws_;
  std::vector<float> logits_;
};

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  SamplingParams sampling;
  // When set (by another thread, or a signal handler: a lock-free atomic), the generation ends after the token
  // being sampled (`pagoda run --chat`: Ctrl-C stops a reply).
  const std::atomic<bool>* stop = nullptr;
};

// Prefills the prompt, then samples until an end-of-generation token, max_new_tokens or the context end.
// on_token is called for each generated token as soon as it is sampled (end-of-generation tokens included).
Result<std::vector<int32_t>> generate(SequenceRunner& runner, std::span<const int32_t> prompt,
                                      const GenerateOptions& options, const std::function<void(int32_t)>& on_token);

// generate() on a runner that already holds the K/V of prompt[0, cached) (cached < prompt.size(), at most the
// runner's length): those positions are kept, the runner is truncated to them and only the rest is evaluated. The
// tokens and their bits are generate()'s: every kernel is batch-invariant, so a prefix evaluated earlier gives the
// K/V it would give now.
Result<std::vector<int32_t>> generate_after(SequenceRunner& runner, std::span<const int32_t> prompt, int64_t cached,
                                            const GenerateOptions& options,
                                            const std::function<void(int32_t)>& on_token);

}  // namespace pagoda
