#include "perf/roofline.h"

#include "kernels/cpu/quant_dot_packed.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "util/fp16.h"
#include "util/huge_pages.h"
#include "util/rng.h"

namespace pagoda {
namespace {

using MonoClock = std::chrono::steady_clock;

double seconds_since(MonoClock::time_point t0) { return std::chrono::duration<double>(MonoClock::now() - t0).count(); }

void add_matrix(DecodeCost& c, const WeightMatrix& w) {
  c.weight_bytes += static_cast<uint64_t>(w.row_bytes) * static_cast<uint64_t>(w.rows);
  const double ops = 2.0 * static_cast<double>(w.rows) * static_cast<double>(w.cols);
  c.ops += ops;
  c.ops_by_type[w.type] += ops;
}

}  // namespace

DecodeCost decode_cost(const Model& model, KvDtype kv_dtype, int64_t context) {
  const ModelWeights& w = model.weights();
  const ModelHParams& hp = model.hparams();
  DecodeCost c;
  c.weight_bytes += w.token_embd.row_bytes;  // one embedding row
  for (const LayerWeights& l : w.layers)
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add_matrix(c, *m);
  add_matrix(c, w.output);
  c.kv_bytes = static_cast<uint64_t>(2 * hp.n_layer * context * kv_bytes(kv_dtype, hp.kv_dim()));
  return c;
}

namespace {

// Best read rate over `reps` passes of the threads of `pool` over buf[0, n), alternately plain and prefetched.
double best_read_rate(ThreadPool& pool, uint64_t* buf, size_t n, int reps) {
  pool.parallel_for(static_cast<int64_t>(n), [&](int64_t b, int64_t e) {  // each thread faults in its own share
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i);
  });
  std::vector<uint64_t> sink(pool.num_threads());
  double best = 0;
  constexpr size_t kLine = 64 / sizeof(uint64_t), kAhead = 4096 / sizeof(uint64_t);  // prefetch 4 KiB ahead
  for (int rep = 0; rep < 2 * reps; ++rep) {
    const bool prefetch = rep % 2 == 1;
    const auto t0 = MonoClock::now();
    pool.parallel_for(pool.num_threads(), [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        const size_t b = n * t / pool.num_threads(), e = n * (t + 1) / pool.num_threads();
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // four chains: the adds never limit the loads
        size_t i = b;
        for (; i + kLine <= e; i += kLine) {  // one cache line per iteration
          if (prefetch) __builtin_prefetch(&buf[std::min(i + kAhead, n - 1)], 0, 0);
          s0 += buf[i] + buf[i + 4], s1 += buf[i + 1] + buf[i + 5], s2 += buf[i + 2] + buf[i + 6],
              s3 += buf[i + 3] + buf[i + 7];
        }
        for (; i < e; ++i) s0 += buf[i];
        sink[t] = s0 + s1 + s2 + s3;
      }
    });
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / seconds_since(t0));
  }
  volatile uint64_t keep = 0;
  for (uint64_t s : sink) keep = keep + s;
  return best;
}

}  // namespace

double measure_read_bandwidth(ThreadPool& pool, uint64_t bytes, int reps) {
  const size_t n = bytes / sizeof(uint64_t);
  double best = 0;
  {
    std::unique_ptr<uint64_t[]> small_pages(new uint64_t[n]);
    best = std::max(best, best_read_rate(pool, small_pages.get(), n, reps));
  }
  HugePageBuffer huge = HugePageBuffer::allocate(n * sizeof(uint64_t));
  if (huge.data() != nullptr)
    best = std::max(best, best_read_rate(pool, reinterpret_cast<uint64_t*>(huge.data()), n, reps));
  return best;
}

double measure_decode_matmul_rate(GgmlType type, int64_t cols, ThreadPool& pool) {
  const auto& traits = ggml_type_traits(type);
  const size_t row_bytes = ggml_row_bytes(traits, cols);
  // 256 KiB of weights per thread: in L2 on every machine we run on, large enough that dispatch is a small part.
  const int64_t rows = std::max<int64_t>(24, (int64_t{256} << 10) * pool.num_threads() / static_cast<int64_t>(row_bytes));
  std::vector<uint8_t> bytes(row_bytes * rows);
  Rng rng(7);
  const int64_t n = rows * cols;
  auto value = [&] { return static_cast<float>(rng.next_double() - 0.5); };
  if (type == GgmlType::F32) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = value();
      std::memcpy(&bytes[4 * i], &v, 4);
    }
  } else if (type == GgmlType::F16 || type == GgmlType::BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = type == GgmlType::F16 ? f32_to_f16(value()) : f32_to_bf16(value());
      std::memcpy(&bytes[2 * i], &h, 2);
    }
  } else {  // quantized: random levels; masking every byte to 0x3F keeps f16 scales finite and normal-sized
    for (auto& b : bytes) b = static_cast<uint8_t>(rng.next_u64() & 0x3F);
  }
  WeightMatrix w{bytes.data(), type, cols, rows, row_bytes};
  PackedWeights packed;  // as the model's matrices of this type run
  packed.pack(w);
  std::vector<float> x(cols), y(rows);
  for (auto& v : x) v = static_cast<float>(rng.next_double() - 0.5);
  matmul(w, x.data(), 1, y.data(), pool);  // warm-up
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const int iters = 200;
    const auto t0 = MonoClock::now();
    for (int i = 0; i < iters; ++i) matmul(w, x.data(), 1, y.data(), pool);
    best = std::max(best, 2.0 * static_cast<double>(rows) * cols * iters / seconds_since(t0));
  }
  return best;
}

Roofline decode_roofline(const Model& model, const DecodeCost& cost, ThreadPool& pool) {
  Roofline r;
  r.bandwidth = measure_read_bandwidth(pool);
  r.bandwidth_bound = r.bandwidth / static_cast<double>(cost.weight_bytes + cost.kv_bytes);
  double seconds = 0;
  for (const auto& [type, ops] : cost.ops_by_type)
    seconds += ops / measure_decode_matmul_rate(type, model.hparams().n_embd, pool);
  r.compute_bound = seconds > 0 ? 1.0 / seconds : 0;
  return r;
}

}  // namespace pagoda
