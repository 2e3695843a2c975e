// Decode attention of a batch (docs/PERFORMANCE.md, issue #28): SEQS sequences of about CONTEXT keys each (lengths
// CONTEXT - 4 * (s % 8)), one query token each, over a paged f16 cache whose blocks are dealt round-robin to the
// sequences (as decode steps allocate them), N_HEADS / N_KV_HEADS heads of 64, LAYERS layers of separate caches
// (so that, past the caches' size, every step reads its K/V from memory). Times a step (every layer once) with the
// kernel set of this process (PAGODA_ISA): median of REPS, GB/s of K/V read; then the same blocks read in the same
// order on the same threads, one word of every cache line summed: the rate the memory gives to a stream with
// nothing else to do.
// Prints a checksum of the outputs, so two builds can be compared for bits.
// Usage: pagoda_attention_decode_batch SEQS CONTEXT N_HEADS N_KV_HEADS LAYERS [reps=30] [threads=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu_features.h"
#include "util/fp16.h"
#include "util/huge_pages.h"
#include "util/rng.h"
#include "util/thread_pool.h"

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s SEQS CONTEXT N_HEADS N_KV_HEADS LAYERS [reps=30] [threads=2]\n", argv[0]);
    return 2;
  }
  const int seqs = std::atoi(argv[1]), ctx = std::atoi(argv[2]), n_heads = std::atoi(argv[3]);
  const int n_kv = std::atoi(argv[4]), layers = std::atoi(argv[5]);
  const int reps = argc > 6 ? std::atoi(argv[6]) : 30, threads = argc > 7 ? std::atoi(argv[7]) : 2;
  if (seqs <= 0 || ctx <= 32 || n_heads <= 0 || n_kv <= 0 || n_heads % n_kv != 0 || layers <= 0 || reps <= 0 ||
      threads <= 0) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const int hd = 64, bs = 16, blocks_per_seq = (ctx + bs - 1) / bs;
  const size_t layer_values = static_cast<size_t>(seqs) * blocks_per_seq * bs * n_kv * hd;  // f16 values a layer
  HugePageBuffer k_buf = HugePageBuffer::allocate(layer_values * layers * 2);
  HugePageBuffer v_buf = HugePageBuffer::allocate(layer_values * layers * 2);
  if (!k_buf.data() || !v_buf.data()) {
    std::fprintf(stderr, "cannot allocate the caches\n");
    return 1;
  }
  auto* k = reinterpret_cast<uint16_t*>(k_buf.data());  // [layer][block][slot][kv head][64]
  auto* v = reinterpret_cast<uint16_t*>(v_buf.data());
  Rng rng(1);
  for (size_t i = 0; i < layer_values * layers; ++i) {
    k[i] = f32_to_f16(static_cast<float>(rng.next_double() * 2 - 1));
    v[i] = f32_to_f16(static_cast<float>(rng.next_double() * 2 - 1));
  }
  std::vector<float> q(static_cast<size_t>(seqs) * n_heads * hd), out(q.size());  // [seq][head][64]
  for (auto& x : q) x = static_cast<float>(rng.next_double() * 2 - 1);
  std::vector<int32_t> table(static_cast<size_t>(seqs) * blocks_per_seq), cu(seqs + 1), lens(seqs);
  for (int s = 0; s < seqs; ++s)
    for (int b = 0; b < blocks_per_seq; ++b) table[static_cast<size_t>(s) * blocks_per_seq + b] = b * seqs + s;
  for (int s = 0; s <= seqs; ++s) cu[s] = s;
  for (int s = 0; s < seqs; ++s) lens[s] = ctx - (s % 8) * 4;
  ThreadPool pool(threads);
  PagedAttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.cu_seqlens_q = cu.data();
  a.seq_lens_kv = lens.data();
  a.block_table = table.data();
  a.num_seqs = seqs;
  a.max_blocks = blocks_per_seq;
  a.block_size = bs;
  a.n_heads = n_heads;
  a.n_kv_heads = n_kv;
  a.head_dim = hd;
  a.scale = 0.125f;
  a.kv_dtype = KvDtype::kF16;
  double keys = 0;
  for (int s = 0; s < seqs; ++s) keys += lens[s];
  const double bytes = 2.0 * layers * keys * n_kv * hd * 2;  // K and V, f16
  auto median_us = [](std::vector<double>& t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  std::vector<double> times;
  double checksum = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < layers; ++l) {
      a.k_cache = k + layer_values * l;
      a.v_cache = v + layer_values * l;
      paged_attention(a, pool);
    }
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    for (float x : out) checksum += x;
  }
  const double attention_us = median_us(times);
  // The same blocks, each thread its sequences (as the attention deals them), in order: a word of every line.
  times.clear();
  std::vector<uint64_t> sums(threads);
  const size_t block_words = static_cast<size_t>(bs) * n_kv * hd / 4;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < layers; ++l) {
      const auto* kw = reinterpret_cast<const uint64_t*>(k + layer_values * l);
      const auto* vw = reinterpret_cast<const uint64_t*>(v + layer_values * l);
      pool.run([&](int tid) {
        uint64_t sum = 0;
        for (int s = tid; s < seqs; s += threads)
          for (int b = 0; b < (lens[s] + bs - 1) / bs; ++b) {
            const size_t at = static_cast<size_t>(table[static_cast<size_t>(s) * blocks_per_seq + b]) * block_words;
            for (size_t i = 0; i < block_words; i += 8) sum += kw[at + i] + vw[at + i];  // a word a cache line
          }
        sums[tid] += sum;
      });
    }
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  const double stream_us = median_us(times);
  std::printf("kernels %s, %d sequences x ~%d keys, heads %d/%d, %d layers, %d threads: attention %.1f us a step "
              "(%.1f GB/s of K/V), plain stream of the same blocks %.1f us (%.1f GB/s); checksum %.6f (%llu)\n",
              kernel_isa_name(default_kernel_isa()), seqs, ctx, n_heads, n_kv, layers, threads, attention_us,
              bytes / attention_us / 1e3, stream_us, bytes / stream_us / 1e3, checksum,
              static_cast<unsigned long long>(sums[0] % 1000));
  return 0;
}
