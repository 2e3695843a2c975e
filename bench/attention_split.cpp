// Decode attention of one long sequence, split-KV off against on (docs/PERFORMANCE.md, issue #12): one query token
// over a paged f16 cache of CONTEXT keys, for a model's head shape, timed per call with the kernel set of this
// process (PAGODA_ISA), never / auto / always split, interleaved rounds, medians; checks that every mode gives the
// same bits. Usage: pagoda_attention_split N_HEADS N_KV_HEADS HEAD_DIM CONTEXT [threads=2] [rounds=7]
#include <algorithm>
#include <chrono>
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
    std::fprintf(stderr, "usage: %s N_HEADS N_KV_HEADS HEAD_DIM CONTEXT [threads] [rounds]\n", argv[0]);
    return 2;
  }
  const int32_t n_heads = std::atoi(argv[1]), n_kv = std::atoi(argv[2]), hd = std::atoi(argv[3]);
  const int32_t ctx = std::atoi(argv[4]);
  const int threads = argc > 5 ? std::atoi(argv[5]) : 2, rounds = argc > 6 ? std::atoi(argv[6]) : 7;
  if (n_heads <= 0 || n_kv <= 0 || n_heads % n_kv != 0 || hd <= 0 || hd > kMaxPagedHeadDim || ctx <= 0 ||
      threads <= 0 || rounds <= 0) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const int32_t bs = 16, blocks = (ctx + bs - 1) / bs;
  Rng rng(1);
  auto rnd = [&] { return f32_to_f16(static_cast<float>(rng.next_double() * 2 - 1)); };
  std::vector<uint16_t> k(static_cast<size_t>(blocks) * bs * n_kv * hd), v(k.size());  // [blocks, bs, n_kv, hd]
  for (auto& x : k) x = rnd();
  for (auto& x : v) x = rnd();
  std::vector<float> q(static_cast<size_t>(n_heads) * hd);  // [1, n_heads, hd]
  for (auto& x : q) x = static_cast<float>(rng.next_double() * 2 - 1);
  std::vector<int32_t> table(blocks);
  for (int32_t i = 0; i < blocks; ++i) table[i] = i;  // pages in order
  const int32_t cu[2] = {0, 1}, lens[1] = {ctx};
  ThreadPool pool(threads);
  const SplitKv modes[3] = {SplitKv::kNever, SplitKv::kAuto, SplitKv::kAlways};
  const char* names[3] = {"never", "auto", "always"};
  std::vector<float> out[3];
  std::vector<double> times[3];
  const int calls = std::max(1, static_cast<int>(2e8 / (static_cast<double>(ctx) * n_kv * hd * 4)));
  for (int r = 0; r < rounds; ++r)
    for (int m = 0; m < 3; ++m) {
      out[m].assign(q.size(), 0.0f);
      PagedAttentionArgs a;
      a.q = q.data();
      a.k_cache = k.data();
      a.v_cache = v.data();
      a.cu_seqlens_q = cu;
      a.seq_lens_kv = lens;
      a.block_table = table.data();
      a.out = out[m].data();
      a.num_seqs = 1;
      a.max_blocks = blocks;
      a.block_size = bs;
      a.n_heads = n_heads;
      a.n_kv_heads = n_kv;
      a.head_dim = hd;
      a.scale = 0.125f;
      a.kv_dtype = KvDtype::kF16;
      a.split_kv = modes[m];
      const auto t = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) paged_attention(a, pool);
      times[m].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
                         calls);
    }
  for (int m = 1; m < 3; ++m)
    if (std::memcmp(out[0].data(), out[m].data(), out[0].size() * 4) != 0) {
      std::fprintf(stderr, "split %s changed the bits\n", names[m]);
      return 1;
    }
  std::printf("kernels %s, heads %d/%d, head_dim %d, context %d, %d threads, %d rounds x %d calls\n",
              kernel_isa_name(default_kernel_isa()), n_heads, n_kv, hd, ctx, threads, rounds, calls);
  for (int m = 0; m < 3; ++m) {
    std::sort(times[m].begin(), times[m].end());
    std::printf("  split %-6s median %9.1f us per call (min %.1f, max %.1f)\n", names[m], times[m][rounds / 2],
                times[m].front(), times[m].back());
  }
  return 0;
}
