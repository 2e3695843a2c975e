// The decode roofline of a model on this machine (issue #12): what one generated token must read and compute, and
// the machine's rates for both, measured here, so `pagoda bench --roofline` can say how close decode runs to the
// bound that applies.
//
//   bandwidth bound: tok/s <= read bandwidth / bytes read per token (every weight matrix once, plus the K/V of the
//                    context at the cache's type);
//   compute bound:   tok/s <= 1 / sum over matrices of (2 * rows * cols) / (the rate the matmul kernel for that
//                    weight type reaches on one token when its weights are in cache), attention ignored (it is
//                    counted in the bytes: at decode it streams the K/V once).
// The roofline is the lower of the two; a fraction is measured tok/s over a bound.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "io/ggml_type.h"
#include "kv/kv_dtype.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace pagoda {

struct DecodeCost {
  uint64_t weight_bytes = 0;           // weight matrices read per token (token embedding: one row)
  uint64_t kv_bytes = 0;               // K/V read per token at the given context
  double ops = 0;                      // 2 * multiply-adds of the matmuls per token
  std::map<GgmlType, double> ops_by_type;  // the same, per weight type
};

// What one decode token at `context` tokens of K/V costs.
DecodeCost decode_cost(const Model& model, KvDtype kv_dtype, int64_t context);

// Read bandwidth in bytes/s: every thread of `pool` sums its share of a `bytes` buffer (far larger than the caches),
// best of `reps` passes after one that faults the pages in, each pass both as a plain stream and with software
// prefetches a fixed distance ahead (on some machines only the latter reaches the rate the decode kernels stream
// at, and a bound below what a kernel reaches is no bound), and each on 4 KiB pages and on huge pages (the weights
// and the KV pool live on the latter, util/huge_pages.h).
double measure_read_bandwidth(ThreadPool& pool, uint64_t bytes = uint64_t{512} << 20, int reps = 5);

// The matmul kernel's rate for one token (ops/s, 2 per multiply-add) on weights of `type` that stay in cache
// (256 KiB per thread), through the same matmul the model uses, best of a few timed runs.
double measure_decode_matmul_rate(GgmlType type, int64_t cols, ThreadPool& pool);

struct Roofline {
  double bandwidth = 0;         // bytes/s
  double bandwidth_bound = 0;   // tok/s
  double compute_bound = 0;     // tok/s
  double bound() const { return bandwidth_bound < compute_bound ? bandwidth_bound : compute_bound; }
  const char* limit() const { return bandwidth_bound < compute_bound ? "bandwidth" : "compute"; }
};

// Measures the machine's rates for this model's weight types and combines them with the cost.
Roofline decode_roofline(const Model& model, const DecodeCost& cost, ThreadPool& pool);

}  // namespace pagoda
