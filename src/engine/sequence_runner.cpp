#include "engine/sequence_runner.h"

#include <algorithm>

namespace pagoda {

SequenceRunner::SequenceRunner(const Model& model, ThreadPool& pool, int64_t n_ctx, KvDtype kv_dtype)
    : model_(model), pool_(pool), kv_(model.hparams(), n_ctx > 0 ? n_ctx : model.hparams().n_ctx_train, kv_dtype) {}

Result<std::span<const float>> SequenceRunner::eval(std::span<const int32_t> tokens, bool all_logits) {
  // A long prompt runs in chunks, so the workspace (about 90 KB per token of a 1B model) stays bounded; the
  // results are bitwise those of one call (every kernel is batch-invariant).
  const size_t chunk = all_logits ? tokens.size() : kPrefillChunk;
  for (size_t begin = 0; begin < tokens.size() || begin == 0; begin += chunk) {
    const size_t n = std::min(chunk, tokens.size() - begin);
    Status st = transformer_forward(model_, tokens.subspan(begin, n), kv_, ws_, pool_, all_logits, logits_);
    if (!st.ok()) return st.error();
    if (n == 0) break;
  }
  return std::span<const float>(logits_);
}

Result<std::vector<int32_t>> generate(SequenceRunner& runner, std::span<const int32_t> prompt,
                                      const GenerateOptions& options, const std::function<void(int32_t)>& on_token) {
  if (prompt.empty()) return make_error("the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) > runner.n_ctx())
    return make_error("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                      std::to_string(runner.n_ctx()));
  runner.reset();
  Sampler sampler(options.sampling);
  std::vector<int32_t> out;
  auto logits = runner.eval(prompt);
  if (!logits.ok()) return logits.error();
  const auto& tok = runner.model().tokenizer();
  for (int64_t i = 0; i < options.max_new_tokens; ++i) {
    const int32_t id = sampler.sample(*logits);
    out.push_back(id);
    if (on_token) on_token(id);
    if (tok.is_end_of_generation(id) || runner.length() >= runner.n_ctx()) break;
    if (i + 1 == options.max_new_tokens) break;
    logits = runner.eval(std::span<const int32_t>(&id, 1));
    if (!logits.ok()) return logits.error();
  }
  return out;
}

}  // namespace pagoda
