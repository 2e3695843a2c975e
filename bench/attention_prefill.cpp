// Prefill attention of one sequence (docs/PERFORMANCE.md, issue #28): PROMPT query tokens, causal, over a paged f16
// cache that holds their keys, for a model's head shape (N_HEADS / N_KV_HEADS heads of HEAD_DIM), timed per call with
// the kernel set of this process (PAGODA_ISA): median of ROUNDS, and the rate in GFLOP/s (2 per multiply-add of the
// score and value products, PROMPT * (PROMPT + 1) / 2 query-key pairs per head) and ns per query-key pair of a head.
// Prints a checksum of the outputs' bits, so two builds can be compared for bits.
// Usage: pagoda_attention_prefill N_HEADS N_KV_HEADS HEAD_DIM PROMPT [threads=2] [rounds=7]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu_features.h"
#include "util/fp16.h"
#include "util/rng.h"
#include "util/thread_pool.h"

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s N_HEADS N_KV_HEADS HEAD_DIM PROMPT [threads] [rounds]\n", argv[0]);
    return 2;
  }
  const int32_t n_heads = std::atoi(argv[1]), n_kv = std::atoi(argv[2]), hd = std::atoi(argv[3]);
  const int32_t prompt = std::atoi(argv[4]);
  const int threads = argc > 5 ? std::atoi(argv[5]) : 2, rounds = argc > 6 ? std::atoi(argv[6]) : 7;
  if (n_heads <= 0 || n_kv <= 0 || n_heads % n_kv != 0 || hd <= 0 || hd > kMaxPagedHeadDim || prompt <= 0 ||
      prompt > (1 << 16) || threads <= 0 || rounds <= 0) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const int32_t bs = 16, blocks = (prompt + bs - 1) / bs;
  Rng rng(1);
  auto rnd = [&] { return static_cast<float>(rng.next_double() * 2 - 1); };
  std::vector<uint16_t> k(static_cast<size_t>(blocks) * bs * n_kv * hd), v(k.size());  // [blocks, bs, n_kv, hd]
  for (auto& x : k) x = f32_to_f16(rnd());
  for (auto& x : v) x = f32_to_f16(rnd());
  std::vector<float> q(static_cast<size_t>(prompt) * n_heads * hd);  // [prompt, n_heads, hd]
  for (auto& x : q) x = rnd();
  std::vector<int32_t> table(blocks);
  for (int32_t i = 0; i < blocks; ++i) table[i] = i;  // pages in order, as a fresh prefill allocates them
  const int32_t cu[2] = {0, prompt}, lens[1] = {prompt};
  ThreadPool pool(threads);
  std::vector<float> out(q.size());
  PagedAttentionArgs a;
  a.q = q.data();
  a.k_cache = k.data();
  a.v_cache = v.data();
  a.cu_seqlens_q = cu;
  a.seq_lens_kv = lens;
  a.block_table = table.data();
  a.out = out.data();
  a.num_seqs = 1;
  a.max_blocks = blocks;
  a.block_size = bs;
  a.n_heads = n_heads;
  a.n_kv_heads = n_kv;
  a.head_dim = hd;
  a.scale = 1.0f / 8;
  a.kv_dtype = KvDtype::kF16;
  const double pairs = static_cast<double>(prompt) * (prompt + 1) / 2 * n_heads;
  const int calls = std::max(1, static_cast<int>(2e8 / (pairs * hd)));
  std::vector<double> times;
  paged_attention(a, pool);  // warm
  for (int r = 0; r < rounds; ++r) {
    const auto t = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) paged_attention(a, pool);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count() / calls);
  }
  std::sort(times.begin(), times.end());
  const double median = times[rounds / 2];
  uint64_t checksum = 0;
  for (float f : out) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    checksum = checksum * 1000003u + bits;
  }
  std::printf(
      "kernels %s, heads %d/%d, head_dim %d, prompt %d, %d threads: median %.3f ms a call (min %.3f), "
      "%.1f GFLOP/s, %.2f ns per query-key pair of a head a thread; checksum %016llx\n",
      kernel_isa_name(default_kernel_isa()), n_heads, n_kv, hd, prompt, threads, median * 1e3, times.front() * 1e3,
      4.0 * pairs * hd / median * 1e-9, median * 1e9 * threads / pairs, static_cast<unsigned long long>(checksum));
  return 0;
}
