#include "engine/sequence_runner.h"

#include <algorithm>

namespace pagoda {

namespace {
constexpr int32_t kDeviceBlock = 256;  // slots per block of the device runner's pool (any size gives the same bits)
}

SequenceRunner::SequenceRunner(const Model& model, ThreadPool& pool, int64_t n_ctx, KvDtype kv_dtype)
    : model_(model),
      pool_(pool),
      n_ctx_(n_ctx > 0 ? n_ctx : model.hparams().n_ctx_train),
      kv_dtype_(kv_dtype),
      kv_(std::make_unique<ContiguousKvCache>(model.hparams(), n_ctx_, kv_dtype)) {}

SequenceRunner::SequenceRunner(const Model& model, ThreadPool& pool, int64_t n_ctx, KvDtype kv_dtype,
                               std::unique_ptr<DeviceForward> device, std::unique_ptr<KvPool> device_kv)
    : model_(model),
      pool_(pool),
      n_ctx_(n_ctx),
      kv_dtype_(kv_dtype),
      device_(std::move(device)),
      device_kv_(std::move(device_kv)) {
  d_table_.resize(device_kv_->shape().num_blocks);
  for (size_t b = 0; b < d_table_.size(); ++b) d_table_[b] = static_cast<int32_t>(b);
}

Result<std::unique_ptr<SequenceRunner>> SequenceRunner::create(const Model& model, ThreadPool& pool, int64_t n_ctx,
                                                               KvDtype kv_dtype, Device device) {
  if (n_ctx <= 0) n_ctx = model.hparams().n_ctx_train;
  if (device == Device::kCpu) return std::make_unique<SequenceRunner>(model, pool, n_ctx, kv_dtype);
  auto forward = create_device_forward(device, model);
  if (!forward.ok()) return forward.error();
  const ModelHParams& hp = model.hparams();
  KvPoolShape shape;
  shape.n_layer = hp.n_layer;
  shape.block_size = kDeviceBlock;
  shape.num_blocks = (n_ctx + kDeviceBlock - 1) / kDeviceBlock;
  shape.n_kv_heads = hp.n_head_kv;
  shape.head_dim = hp.head_dim;
  shape.dtype = kv_dtype;
  auto memory = (*forward)->allocate_kv(shape);
  if (!memory.ok()) return memory.error();
  auto kv = KvPool::create_on_device(shape, std::move(*memory));
  if (!kv.ok()) return kv.error();
  return std::unique_ptr<SequenceRunner>(
      new SequenceRunner(model, pool, n_ctx, kv_dtype, std::move(*forward), std::move(*kv)));
}

// One forward call of the device path: the tokens at positions length .. length + T - 1, slot = position.
Status SequenceRunner::eval_on_device(std::span<const int32_t> tokens, bool all_logits) {
  const int64_t T = static_cast<int64_t>(tokens.size()), pos0 = device_length_;
  if (T == 0) return make_error("forward called with no tokens");
  if (pos0 + T > n_ctx_)
    return make_error("context full: " + std::to_string(pos0 + T) + " tokens exceed the context size of " +
                      std::to_string(n_ctx_));
  const KvPoolShape& shape = device_kv_->shape();
  const ForwardBatch batch = d_batch_.make(tokens, pos0, all_logits, d_table_);
  KvStorage storage;
  storage.k_base = device_kv_->k(0);
  storage.v_base = device_kv_->v(0);
  storage.dtype = shape.dtype;
  storage.layer_stride = shape.layer_bytes();
  storage.num_slots = shape.token_capacity();
  storage.block_size = static_cast<int32_t>(shape.block_size);
  PAGODA_RETURN_IF_ERROR(device_->forward(batch, storage, logits_));
  device_length_ = pos0 + T;
  return Status::success();
}

Result<std::span<const float>> SequenceRunner::eval(std::span<const int32_t> tokens, bool all_logits) {
  // A long prompt runs in chunks, so the workspace (about 90 KB per token of a 1B model) stays bounded; the
  // results are bitwise those of one call (every kernel is batch-invariant).
  const size_t chunk = all_logits ? tokens.size() : kPrefillChunk;
  for (size_t begin = 0; begin < tokens.size() || begin == 0; begin += chunk) {
    const size_t n = std::min(chunk, tokens.size() - begin);
    Status st = device_ ? eval_on_device(tokens.subspan(begin, n), all_logits)
                        : transformer_forward(model_, tokens.subspan(begin, n), *kv_, ws_, pool_, all_logits, logits_);
    if (!st.ok()) return st.error();
    if (n == 0) break;
  }
  return std::span<const float>(logits_);
}

Result<std::vector<int32_t>> generate(SequenceRunner& runner, std::span<const int32_t> prompt,
                                      const GenerateOptions& options, const std::function<void(int32_t)>& on_token) {
  return generate_after(runner, prompt, 0, options, on_token);
}

Result<std::vector<int32_t>> generate_after(SequenceRunner& runner, std::span<const int32_t> prompt, int64_t cached,
                                            const GenerateOptions& options,
                                            const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) return make_error("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) > runner.n_ctx())
    return make_error("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                      std::to_string(runner.n_ctx()));
  if (cached < 0 || cached >= static_cast<int64_t>(prompt.size()) || cached > runner.length())
    return make_error("generate_after: " + std::to_string(cached) + " cached tokens of a " +
                      std::to_string(prompt.size()) + "-token prompt on a runner holding " +
                      std::to_string(runner.length()));
  runner.truncate(cached);
  Sampler sampler(options.sampling);
  std::vector<int32_t> out;
  auto logits = runner.eval(prompt.subspan(static_cast<size_t>(cached)));
  if (!logits.ok()) return logits.error();
  const auto& tok = runner.model().tokenizer();
  for (int64_t i = 0; i < options.max_new_tokens; ++i) {
    // The penalties see the whole prompt (the cached part included) and the output so far, as the engine's do.
    const int32_t id = sampler.sample(*logits, prompt, out);
    out.push_back(id);
    if (on_token) on_token(id);
    if (tok.is_end_of_generation(id) || runner.length() >= runner.n_ctx()) break;
    if (i + 1 == options.max_new_tokens) break;
    if (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) break;
    logits = runner.eval(std::span<const int32_t>(&id, 1));
    if (!logits.ok()) return logits.error();
  }
  return out;
}

}  // namespace pagoda
