// Decode's two schedules in one process (docs/PERFORMANCE.md, issue #28): the one-region forward of small batches
// (model/transformer_team.h) against a parallel region per step (ForwardSchedule::kRegionPerStep), in alternating
// rounds, so that both meet the same machine: a VM's bandwidth and core placement drift by the minute. Each round
// decodes TOKENS greedy tokens from a one-token prompt with each schedule (the order flips every round); prints
// every round, then the medians and the median of the rounds' ratios.
// Usage: pagoda_decode_schedule_ab MODEL [tokens=128] [rounds=10] [threads=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "model/kv_cache.h"
#include "model/model.h"
#include "model/transformer.h"
#include "util/thread_pool.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [tokens=128] [rounds=10] [threads=2]\n", argv[0]);
    return 2;
  }
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 128, rounds = argc > 3 ? std::atoi(argv[3]) : 10;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  if (tokens <= 0 || rounds <= 0 || threads <= 0) {
    std::fprintf(stderr, "tokens, rounds and threads must be positive\n");
    return 2;
  }
  auto model = Model::load(argv[1]);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().message.c_str());
    return 1;
  }
  const Model& m = **model;
  const ModelHParams& hp = m.hparams();
  ThreadPool pool(threads);
  ContiguousKvCache kv(hp, tokens + 1);
  TransformerWorkspace ws;
  std::vector<float> logits;
  const ForwardSchedule schedules[2] = {ForwardSchedule::kAuto, ForwardSchedule::kRegionPerStep};
  const char* names[2] = {"one region", "region per step"};
  // One decode run: greedy from token 1, timed over `tokens` steps after the prompt.
  auto run = [&](ForwardSchedule schedule, std::vector<int32_t>& out) {
    kv.clear();
    out.clear();
    int32_t token = 1;
    double seconds = 0;
    for (int i = 0; i <= tokens; ++i) {
      const int32_t block0 = 0;
      const ForwardBatch batch =
          ws.single.make(std::span<const int32_t>(&token, 1), kv.length(), false, std::span<const int32_t>(&block0, 1));
      KvStorage storage{kv.k(0),       kv.v(0),
                        kv.dtype(),    kv.capacity() * kv.slot_bytes(),
                        kv.capacity(), static_cast<int32_t>(kv.capacity())};
      const auto t0 = std::chrono::steady_clock::now();
      const Status st = transformer_forward_batch(m, batch, storage, ws, pool, logits, AttentionImpl::kFused, schedule);
      const auto t1 = std::chrono::steady_clock::now();
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.error().message.c_str());
        std::exit(1);
      }
      kv.set_length(kv.length() + 1);
      if (i > 0) seconds += std::chrono::duration<double>(t1 - t0).count();
      token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      out.push_back(token);
    }
    return tokens / seconds;
  };
  std::vector<double> rate[2], ratio;
  std::vector<int32_t> out[2];
  run(ForwardSchedule::kAuto, out[0]);  // warm-up: page in the weights
  for (int r = 0; r < rounds; ++r) {
    double tps[2];
    for (int k = 0; k < 2; ++k) {
      const int c = (r % 2 == 0) ? k : 1 - k;
      tps[c] = run(schedules[c], out[c]);
      rate[c].push_back(tps[c]);
    }
    if (out[0] != out[1]) {
      std::fprintf(stderr, "the schedules generated different tokens\n");
      return 1;
    }
    ratio.push_back(tps[0] / tps[1]);
    std::printf("round %d: %s %.1f tok/s, %s %.1f tok/s, ratio %.3f\n", r + 1, names[0], tps[0], names[1], tps[1],
                ratio.back());
  }
  std::printf("%d threads, %d tokens, %d rounds: %s %.1f tok/s, %s %.1f tok/s (medians); median ratio %.3f\n", threads,
              tokens, rounds, names[0], median(rate[0]), names[1], median(rate[1]), median(ratio));
  return 0;
}
