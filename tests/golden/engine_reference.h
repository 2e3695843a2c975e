// Shared by the engine's Gate 0 tests: the plain single-sequence path as the reference, and a stream reader.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "engine/request_stream.h"
#include "engine/sequence_runner.h"
#include "model/model.h"

namespace pagoda {

struct SequenceOutput {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;  // [step][n_vocab]
  FinishReason finish = FinishReason::kNone;
  std::string error;
  WarmStartUse warm_start = WarmStartUse::kOff;  // what the first token event said
};

// Greedy decoding of `prompt` through SequenceRunner alone (contiguous cache), stopping at max_tokens or EOS.
inline SequenceOutput greedy_single_sequence(const Model& model, std::span<const int32_t> prompt, int64_t max_tokens,
                                             int64_t ctx = 1024, KvDtype kv_dtype = KvDtype::kF32) {
  ThreadPool pool(2);
  SequenceRunner runner(model, pool, ctx, kv_dtype);
  SequenceOutput out;
  auto logits = runner.eval(prompt);
  EXPECT_TRUE(logits.ok());
  for (int64_t i = 0; i < max_tokens && logits.ok(); ++i) {
    const int32_t next = Sampler::argmax(*logits);
    out.ids.push_back(next);
    out.logits.emplace_back(logits->begin(), logits->end());
    if (model.tokenizer().is_end_of_generation(next)) break;
    logits = runner.eval(std::span<const int32_t>(&next, 1));
    EXPECT_TRUE(logits.ok());
  }
  return out;
}

// Appends every event queued on the stream now (tokens with their logits, and the finish).
inline void drain_stream(RequestStream& stream, SequenceOutput& o) {
  StreamEvent ev;
  while (stream.try_next(&ev)) {
    if (ev.kind == StreamEvent::Kind::kFinished) {
      o.finish = ev.finish;
      o.error = ev.error;
    } else {
      if (o.ids.empty()) o.warm_start = ev.warm_start;
      o.ids.push_back(ev.token);
      o.logits.push_back(std::move(ev.logits));
    }
  }
}

}  // namespace pagoda
