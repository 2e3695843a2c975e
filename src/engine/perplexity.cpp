#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace pagoda {

double negative_log_likelihood(std::span<const float> logits, int32_t token) {
  float max_logit = logits[0];
  for (float l : logits) max_logit = std::max(max_logit, l);
  double sum_exp = 0.0;
  for (float l : logits) sum_exp += std::exp(l - max_logit);  // float expf, summed in double
  return -(static_cast<double>(logits[token] - max_logit) - std::log(sum_exp));
}

Result<PerplexityResult> perplexity(SequenceRunner& runner, std::span<const int32_t> tokens, int32_t bos,
                                    const PerplexityOptions& options,
                                    const std::function<void(int64_t, double)>& on_chunk) {
  const int64_t n_ctx = options.n_ctx;
  if (n_ctx < 4) return make_error("the chunk length (-c) must be at least 4 tokens, not " + std::to_string(n_ctx));
  if (runner.n_ctx() < n_ctx)
    return make_error("the KV cache holds " + std::to_string(runner.n_ctx()) + " tokens, fewer than a chunk of " +
                      std::to_string(n_ctx));
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 2 * n_ctx)
    return make_error("the text has " + std::to_string(n) + " tokens; a perplexity with chunks of " +
                      std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) + " (as llama-perplexity)");
  PerplexityResult r;
  r.text_tokens = n;
  r.chunks = n / n_ctx;
  if (options.max_chunks >= 0) r.chunks = std::min(r.chunks, options.max_chunks);
  const int64_t first = n_ctx / 2;
  const int32_t n_vocab = runner.model().tokenizer().n_vocab();
  double nll = 0.0, nll2 = 0.0;
  std::vector<int32_t> chunk(n_ctx);
  for (int64_t c = 0; c < r.chunks; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (bos >= 0) chunk[0] = bos;
    runner.reset();
    auto logits = runner.eval(chunk, /*all_logits=*/true);  // [n_ctx, n_vocab]
    if (!logits.ok()) return logits.error();
    for (int64_t i = first; i < n_ctx - 1; ++i) {
      const double v = negative_log_likelihood(logits->subspan(i * n_vocab, n_vocab), tokens[c * n_ctx + i + 1]);
      nll += v;
      nll2 += v * v;
    }
    r.scored_tokens += n_ctx - 1 - first;
    r.running_ppl.push_back(std::exp(nll / r.scored_tokens));
    if (on_chunk) on_chunk(c, r.running_ppl.back());
  }
  r.nll = nll / r.scored_tokens;
  r.ppl = std::exp(r.nll);
  const double var = nll2 / r.scored_tokens - r.nll * r.nll;
  r.ppl_error = var > 0 && r.scored_tokens > 1 ? std::sqrt(var / (r.scored_tokens - 1)) * r.ppl : 0.0;
  return r;
}

}  // namespace pagoda
