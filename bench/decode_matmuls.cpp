// Decode's matmuls alone (docs/PERFORMANCE.md, issue #28): every weight matrix of a model times one token, layer by
// layer in the forward pass's order and grouping (matmul_many for Q/K/V and gate/up), and the output head, with no
// attention, norms or other serial work between them; then the read bandwidth probe of `pagoda bench`'s roofline in
// the same process. The ratio says how close the matmul kernels stream to the probe by themselves, so the rest of
// a decode step's distance from the roofline is the work between them.
// Usage: pagoda_decode_matmuls MODEL [tokens_timed=300] [threads=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kv/kv_dtype.h"
#include "model/model.h"
#include "perf/roofline.h"
#include "util/thread_pool.h"

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [tokens_timed=300] [threads=2]\n", argv[0]);
    return 2;
  }
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 300, threads = argc > 3 ? std::atoi(argv[3]) : 2;
  if (tokens <= 0 || threads <= 0) {
    std::fprintf(stderr, "tokens and threads must be positive\n");
    return 2;
  }
  auto model = Model::load(argv[1]);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().message.c_str());
    return 1;
  }
  const Model& m = **model;
  const ModelHParams& hp = m.hparams();
  const ModelWeights& w = m.weights();
  if (hp.spec->mlp != MlpKind::kSwiGlu) {
    std::fprintf(stderr, "only SwiGLU (Llama-family) models\n");
    return 2;
  }
  ThreadPool pool(threads);
  const int64_t widest = std::max({hp.n_embd, hp.q_dim(), hp.n_ff});
  std::vector<float> x(widest), q(hp.q_dim()), k(hp.kv_dim()), v(hp.kv_dim()), o(hp.n_embd), gate(hp.n_ff),
      up(hp.n_ff), down(hp.n_embd), logits(hp.n_vocab);  // x: [widest] one token's input, reused by every matrix
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.001f * static_cast<float>(i % 97) - 0.04f;
  auto token = [&] {
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      const LayerWeights& l = w.layers[il];
      const WeightMatrix* qkv[3] = {&l.wq, &l.wk, &l.wv};
      float* qkv_out[3] = {q.data(), k.data(), v.data()};
      matmul_many(qkv, qkv_out, 3, x.data(), 1, pool);
      matmul(l.wo, x.data(), 1, o.data(), pool);
      const WeightMatrix* gate_up[2] = {&l.w_gate, &l.w_up};
      float* gate_up_out[2] = {gate.data(), up.data()};
      matmul_many(gate_up, gate_up_out, 2, x.data(), 1, pool);
      matmul(l.w_down, x.data(), 1, down.data(), pool);
    }
    matmul(w.output, x.data(), 1, logits.data(), pool);
  };
  for (int i = 0; i < 20; ++i) token();  // warm-up: packing, page faults
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < tokens; ++i) token();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double probe = measure_read_bandwidth(pool);
  const DecodeCost cost = decode_cost(m, kDefaultKvDtype, 1);
  const double bytes = static_cast<double>(cost.weight_bytes);
  std::printf("matmuls alone: %.1f tok/s, %.1f GB/s of weights; read bandwidth probe %.1f GB/s: %.0f%%\n",
              tokens / seconds, bytes * tokens / seconds / 1e9, probe / 1e9, 100.0 * bytes * tokens / seconds / probe);
  return 0;
}
