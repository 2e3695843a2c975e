// Perplexity of a model over a text, computed as llama.cpp's llama-perplexity computes it (tools/perplexity,
// "perplexity()" at the goldens' commit da46e59), so that the two numbers compare:
//   - the text is tokenized once, BOS first when the model adds one, special-token text not parsed;
//   - it is cut into chunks of n_ctx tokens (floor(tokens / n_ctx) chunks; the tail is dropped); each chunk runs
//     from an empty KV cache, its first token replaced by BOS when the model adds one;
//   - in each chunk only the second half is scored: the logits at positions n_ctx/2 .. n_ctx-2 predict the tokens
//     after them, each as -log softmax (max in float, sum of expf in double);
//   - PPL = exp(mean negative log-likelihood over every scored token), with llama.cpp's +/- estimate
//     ppl * sqrt((E[nll^2] - E[nll]^2) / (count - 1)).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/sequence_runner.h"
#include "util/result.h"

namespace pagoda {

struct PerplexityOptions {
  int64_t n_ctx = 512;      // chunk length in tokens (llama-perplexity's -c)
  int64_t max_chunks = -1;  // -1: every whole chunk (llama-perplexity's --chunks)
};

struct PerplexityResult {
  int64_t text_tokens = 0;    // the tokenized text, BOS included
  int64_t chunks = 0;
  int64_t scored_tokens = 0;  // chunks * (n_ctx - 1 - n_ctx / 2)
  double nll = 0.0;           // mean negative log-likelihood per scored token (nats)
  double ppl = 0.0;           // exp(nll)
  double ppl_error = 0.0;     // llama.cpp's "+/-"
  std::vector<double> running_ppl;  // after each chunk, as llama-perplexity prints "[i]ppl,"
};

// -log softmax(logits)[token], as llama-perplexity computes it.
double negative_log_likelihood(std::span<const float> logits, int32_t token);

// tokens: the whole tokenized text (Tokenizer::encode(text, add_special = true)); bos: the token that replaces
// each chunk's first one, or -1 to keep them (a model without add_bos). An Error when the text has fewer than
// 2 * n_ctx tokens (llama-perplexity refuses the same), or the runner's context is smaller than n_ctx.
// on_chunk(i, running ppl) after each chunk.
Result<PerplexityResult> perplexity(SequenceRunner& runner, std::span<const int32_t> tokens, int32_t bos,
                                    const PerplexityOptions& options,
                                    const std::function<void(int64_t, double)>& on_chunk = {});

}  // namespace pagoda
