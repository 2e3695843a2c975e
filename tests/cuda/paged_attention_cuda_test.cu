// Tests of the CUDA paged-attention kernel (src/cuda/paged_attention_cuda.h). Needs an NVIDIA GPU; built only with
// -DPAGODA_CUDA=ON and run by ctest there (scripts/cuda/device_check.sh). No test framework: the device image has
// none, so each check prints FAIL with its numbers and the exit status counts them.
//
// What is checked, for head sizes 8 to 256, groups 1 to 8 and f32/f16/bf16 caches:
//   - against a double-precision reference over the stored values: ||out - ref|| / ||ref|| <= 2e-6 and
//     max |out - ref| <= 2e-6 (f32 arithmetic; values of magnitude <= 1; measured on an H200: at most 2.5e-7 and
//     5.7e-7), for decode and prefill-chunk queries,
//     kv_begin, 1 to 40,000 keys (1 to 128 segments);
//   - every output element written (the output is poisoned with NaN before each run);
//   - bitwise: each sequence alone equals its rows in the batch; another block size and another physical block
//     order give the same bits; a query with kv_begin = b gives the bits of the same query over the keys from b on;
//     a second run gives the same bits;
//   - arguments the kernel does not take are refused with an error naming them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/paged_attention_cuda.h"

namespace {

using pagoda::KvDtype;
using namespace pagoda::cuda;

int g_failures = 0;
int g_checks = 0;

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    ++g_checks;                                                                   \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
      std::fprintf(stderr, __VA_ARGS__);                                          \
      std::fprintf(stderr, "\n");                                                 \
      ++g_failures;                                                               \
    }                                                                             \
  } while (0)

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "FATAL: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

const char* dtype_name(KvDtype t) { return t == KvDtype::kF32 ? "f32" : t == KvDtype::kF16 ? "f16" : "bf16"; }
int dtype_bytes(KvDtype t) { return t == KvDtype::kF32 ? 4 : 2; }

// x rounded to the cache type, and its bytes.
float round_to(KvDtype t, float x) {
  if (t == KvDtype::kF16) return __half2float(__float2half_rn(x));
  if (t == KvDtype::kBF16) return __bfloat162float(__float2bfloat16_rn(x));
  return x;
}
void encode(KvDtype t, float x, uint8_t* dst) {
  if (t == KvDtype::kF32) {
    std::memcpy(dst, &x, 4);
  } else if (t == KvDtype::kF16) {
    const __half h = __float2half_rn(x);
    std::memcpy(dst, &h, 2);
  } else {
    const __nv_bfloat16 h = __float2bfloat16_rn(x);
    std::memcpy(dst, &h, 2);
  }
}

struct Shape {
  int n_heads, n_kv_heads, head_dim;
  KvDtype dtype;
};

// Sequences' logical K/V (the exact stored values) and queries.
struct Problem {
  Shape sh;
  std::vector<int32_t> lens, q_lens, kv_begin;
  std::vector<std::vector<float>> k, v;  // [seq] -> [pos][kv_head][head_dim]
  std::vector<float> q;                  // [token][head][head_dim], tokens of sequence 0 first
  float scale;
  int num_tokens() const { return std::accumulate(q_lens.begin(), q_lens.end(), 0); }
  int row() const { return sh.n_kv_heads * sh.head_dim; }
};

Problem make_problem(std::mt19937& rng, Shape sh, std::vector<int32_t> lens, std::vector<int32_t> q_lens,
                     std::vector<int32_t> kv_begin, float q_gain = 1.0f) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Problem p{sh, lens, q_lens, kv_begin, {}, {}, {}, 1.0f / std::sqrt(static_cast<float>(sh.head_dim))};
  for (size_t s = 0; s < lens.size(); ++s) {
    std::vector<float> k(static_cast<size_t>(lens[s]) * p.row()), v(k.size());
    for (auto& x : k) x = round_to(sh.dtype, u(rng));
    for (auto& x : v) x = round_to(sh.dtype, u(rng));
    p.k.push_back(std::move(k));
    p.v.push_back(std::move(v));
  }
  p.q.resize(static_cast<size_t>(p.num_tokens()) * sh.n_heads * sh.head_dim);
  for (auto& x : p.q) x = q_gain * u(rng);
  return p;
}

// The cache in device memory: physical blocks in a shuffled order, unused blocks filled with NaN bytes.
struct Pool {
  int block_size = 0, max_blocks = 0;
  std::vector<int32_t> table;  // [seq][max_blocks]
  void* k = nullptr;
  void* v = nullptr;
  ~Pool() {
    cudaFree(k);
    cudaFree(v);
  }
};

void build_pool(const Problem& p, int block_size, std::mt19937& rng, Pool& pool) {
  pool.block_size = block_size;
  int total = 0;
  for (int32_t len : p.lens) {
    pool.max_blocks = std::max(pool.max_blocks, (len + block_size - 1) / block_size);
    total += (len + block_size - 1) / block_size;
  }
  const int num_blocks = total + 3;  // spare blocks nobody's table names
  std::vector<int32_t> order(num_blocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t row_bytes = static_cast<size_t>(p.row()) * dtype_bytes(p.sh.dtype);
  const size_t block_bytes = row_bytes * block_size;
  std::vector<uint8_t> kb(block_bytes * num_blocks, 0xff), vb(kb.size(), 0xff);
  pool.table.assign(p.lens.size() * pool.max_blocks, -1);
  int next = 0;
  for (size_t s = 0; s < p.lens.size(); ++s) {
    for (int32_t pos = 0; pos < p.lens[s]; ++pos) {
      if (pos % block_size == 0) pool.table[s * pool.max_blocks + pos / block_size] = order[next++];
      const size_t phys = static_cast<size_t>(pool.table[s * pool.max_blocks + pos / block_size]) * block_size +
                          pos % block_size;
      for (int i = 0; i < p.row(); ++i) {
        encode(p.sh.dtype, p.k[s][static_cast<size_t>(pos) * p.row() + i],
               &kb[phys * row_bytes + i * dtype_bytes(p.sh.dtype)]);
        encode(p.sh.dtype, p.v[s][static_cast<size_t>(pos) * p.row() + i],
               &vb[phys * row_bytes + i * dtype_bytes(p.sh.dtype)]);
      }
    }
  }
  for (auto& x : pool.table)
    if (x < 0) x = 0;  // padding
  cuda_ok(cudaMalloc(&pool.k, kb.size()), "cudaMalloc k");
  cuda_ok(cudaMalloc(&pool.v, vb.size()), "cudaMalloc v");
  cuda_ok(cudaMemcpy(pool.k, kb.data(), kb.size(), cudaMemcpyHostToDevice), "copy k");
  cuda_ok(cudaMemcpy(pool.v, vb.data(), vb.size(), cudaMemcpyHostToDevice), "copy v");
}

template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  cuda_ok(cudaMalloc(&d, std::max<size_t>(1, h.size()) * sizeof(T)), "cudaMalloc");
  if (!h.empty()) cuda_ok(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "copy");
  return d;
}

// Runs the kernel over the sequences `seqs` of p (their rows of q, in that order) and returns the output rows.
std::vector<float> run_gpu(const Problem& p, const Pool& pool, const std::vector<int>& seqs, bool with_kv_begin) {
  const int D = p.sh.head_dim, H = p.sh.n_heads;
  std::vector<int32_t> cu{0}, lens, table, begins;
  std::vector<float> q;
  std::vector<int> first_token(p.lens.size(), 0);
  for (size_t s = 1; s < p.lens.size(); ++s) first_token[s] = first_token[s - 1] + p.q_lens[s - 1];
  int32_t max_kv = 0;
  for (int s : seqs) {
    cu.push_back(cu.back() + p.q_lens[s]);
    lens.push_back(p.lens[s]);
    begins.push_back(p.kv_begin[s]);
    max_kv = std::max(max_kv, p.lens[s] - (with_kv_begin ? p.kv_begin[s] : 0));
    table.insert(table.end(), pool.table.begin() + static_cast<size_t>(s) * pool.max_blocks,
                 pool.table.begin() + static_cast<size_t>(s + 1) * pool.max_blocks);
    q.insert(q.end(), p.q.begin() + static_cast<size_t>(first_token[s]) * H * D,
             p.q.begin() + static_cast<size_t>(first_token[s] + p.q_lens[s]) * H * D);
  }
  const int tokens = cu.back();
  CudaPagedAttentionArgs a;
  a.q = to_device(q);
  a.k_cache = pool.k;
  a.v_cache = pool.v;
  a.cu_seqlens_q = to_device(cu);
  a.seq_lens_kv = to_device(lens);
  a.block_table = to_device(table);
  a.kv_begin = with_kv_begin ? to_device(begins) : nullptr;
  cuda_ok(cudaMalloc(&a.out, static_cast<size_t>(tokens) * H * D * sizeof(float)), "cudaMalloc out");
  cuda_ok(cudaMemset(a.out, 0xff, static_cast<size_t>(tokens) * H * D * sizeof(float)), "poison out");
  a.num_seqs = static_cast<int32_t>(seqs.size());
  a.num_tokens = tokens;
  a.max_blocks = pool.max_blocks;
  a.block_size = pool.block_size;
  a.n_heads = H;
  a.n_kv_heads = p.sh.n_kv_heads;
  a.head_dim = D;
  a.max_kv_len = max_kv;
  a.scale = p.scale;
  a.kv_dtype = p.sh.dtype;
  const size_t ws_bytes = paged_attention_cuda_workspace_bytes(a);
  void* ws = nullptr;
  if (ws_bytes) cuda_ok(cudaMalloc(&ws, ws_bytes), "cudaMalloc workspace");
  const pagoda::Status st = paged_attention_cuda(a, ws, ws_bytes);
  if (!st.ok()) {
    std::fprintf(stderr, "FATAL: %s\n", st.error().message.c_str());
    std::exit(2);
  }
  cuda_ok(cudaDeviceSynchronize(), "kernel");
  std::vector<float> out(static_cast<size_t>(tokens) * H * D);
  cuda_ok(cudaMemcpy(out.data(), a.out, out.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy out");
  cudaFree(const_cast<float*>(a.q));
  cudaFree(const_cast<int32_t*>(a.cu_seqlens_q));
  cudaFree(const_cast<int32_t*>(a.seq_lens_kv));
  cudaFree(const_cast<int32_t*>(a.block_table));
  cudaFree(const_cast<int32_t*>(a.kv_begin));
  cudaFree(a.out);
  cudaFree(ws);
  return out;
}

std::vector<int> all_seqs(const Problem& p) {
  std::vector<int> s(p.lens.size());
  std::iota(s.begin(), s.end(), 0);
  return s;
}

// The double-precision reference over the stored values: [token][head][head_dim].
std::vector<double> reference(const Problem& p, bool with_kv_begin) {
  const int D = p.sh.head_dim, H = p.sh.n_heads, group = H / p.sh.n_kv_heads;
  std::vector<double> out(static_cast<size_t>(p.num_tokens()) * H * D);
  int token = 0;
  for (size_t s = 0; s < p.lens.size(); ++s) {
    for (int i = 0; i < p.q_lens[s]; ++i, ++token) {
      const int n_keys = p.lens[s] - p.q_lens[s] + i + 1, b = with_kv_begin ? p.kv_begin[s] : 0;
      for (int h = 0; h < H; ++h) {
        const float* q = &p.q[(static_cast<size_t>(token) * H + h) * D];
        const int kvh = h / group;
        std::vector<double> w(n_keys - b);
        double mx = -INFINITY;
        for (int k = b; k < n_keys; ++k) {
          const float* kr = &p.k[s][static_cast<size_t>(k) * p.row() + kvh * D];
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * kr[d];
          w[k - b] = dot * p.scale;
          mx = std::max(mx, w[k - b]);
        }
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - mx));
        double* o = &out[(static_cast<size_t>(token) * H + h) * D];
        for (int k = b; k < n_keys; ++k) {
          const float* vr = &p.v[s][static_cast<size_t>(k) * p.row() + kvh * D];
          for (int d = 0; d < D; ++d) o[d] += w[k - b] / sum * vr[d];
        }
      }
    }
  }
  return out;
}

void check_against_reference(const char* name, const Problem& p, const std::vector<float>& got, bool with_kv_begin) {
  const std::vector<double> ref = reference(p, with_kv_begin);
  double err2 = 0, ref2 = 0, max_abs = 0;
  size_t unwritten = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) {
      ++unwritten;
      continue;
    }
    const double e = got[i] - ref[i];
    err2 += e * e;
    ref2 += ref[i] * ref[i];
    max_abs = std::max(max_abs, std::fabs(e));
  }
  const double rel = std::sqrt(err2 / std::max(ref2, 1e-300));
  std::printf("  %-44s rel %.2e  max abs %.2e\n", name, rel, max_abs);
  CHECK(unwritten == 0, "%s: %zu of %zu outputs not written (NaN)", name, unwritten, ref.size());
  CHECK(rel <= 2e-6, "%s: relative error %.3e over 2e-6", name, rel);
  CHECK(max_abs <= 2e-6, "%s: max abs error %.3e over 2e-6", name, max_abs);
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Every property on one shape and one set of sequences.
void check_shape(const char* name, Shape sh, std::vector<int32_t> lens, std::vector<int32_t> q_lens,
                 std::vector<int32_t> kv_begin, int block_size, int other_block_size, uint32_t seed,
                 float q_gain = 1.0f) {
  std::mt19937 rng(seed);
  const Problem p = make_problem(rng, sh, lens, q_lens, kv_begin, q_gain);
  std::printf("%s: heads %d/%d, head_dim %d, %s, block size %d\n", name, sh.n_heads, sh.n_kv_heads, sh.head_dim,
              dtype_name(sh.dtype), block_size);
  Pool pool;
  build_pool(p, block_size, rng, pool);
  const std::vector<float> batch = run_gpu(p, pool, all_seqs(p), false);
  check_against_reference((std::string(name) + " batch").c_str(), p, batch, false);
  const std::vector<float> batch_begin = run_gpu(p, pool, all_seqs(p), true);
  check_against_reference((std::string(name) + " batch, kv_begin").c_str(), p, batch_begin, true);

  const std::vector<float> again = run_gpu(p, pool, all_seqs(p), false);
  CHECK(same_bits(batch.data(), again.data(), batch.size()), "%s: a second run gave other bits", name);

  // Each sequence alone, and the batch in reverse order.
  const size_t row = static_cast<size_t>(sh.n_heads) * sh.head_dim;
  int first = 0;
  for (size_t s = 0; s < p.lens.size(); ++s) {
    const std::vector<float> alone = run_gpu(p, pool, {static_cast<int>(s)}, false);
    CHECK(same_bits(alone.data(), batch.data() + first * row, alone.size()),
          "%s: sequence %zu (%d keys) alone differs from its rows in the batch", name, s, p.lens[s]);
    const std::vector<float> alone_begin = run_gpu(p, pool, {static_cast<int>(s)}, true);
    CHECK(same_bits(alone_begin.data(), batch_begin.data() + first * row, alone_begin.size()),
          "%s: sequence %zu with kv_begin alone differs from the batch", name, s);
    first += p.q_lens[s];
  }
  std::vector<int> reversed = all_seqs(p);
  std::reverse(reversed.begin(), reversed.end());
  const std::vector<float> rev = run_gpu(p, pool, reversed, false);
  size_t at = 0;
  for (int s : reversed) {
    int f = 0;
    for (int i = 0; i < s; ++i) f += p.q_lens[i];
    CHECK(same_bits(rev.data() + at, batch.data() + f * row, p.q_lens[s] * row),
          "%s: sequence %d differs when the batch is reversed", name, s);
    at += p.q_lens[s] * row;
  }

  // Another block size and another physical order.
  Pool other;
  build_pool(p, other_block_size, rng, other);
  const std::vector<float> moved = run_gpu(p, other, all_seqs(p), true);
  CHECK(same_bits(moved.data(), batch_begin.data(), moved.size()),
        "%s: block size %d and %d give different bits", name, block_size, other_block_size);

  // kv_begin = b equals the same queries over a sequence that holds only keys b.. .
  Problem cut = p;
  for (size_t s = 0; s < p.lens.size(); ++s) {
    const size_t drop = static_cast<size_t>(p.kv_begin[s]) * p.row();
    cut.k[s].erase(cut.k[s].begin(), cut.k[s].begin() + drop);
    cut.v[s].erase(cut.v[s].begin(), cut.v[s].begin() + drop);
    cut.lens[s] -= p.kv_begin[s];
    cut.kv_begin[s] = 0;
  }
  Pool cut_pool;
  build_pool(cut, block_size, rng, cut_pool);
  const std::vector<float> shifted = run_gpu(cut, cut_pool, all_seqs(cut), false);
  CHECK(same_bits(shifted.data(), batch_begin.data(), shifted.size()),
        "%s: kv_begin = b differs from a sequence holding only the keys from b on", name);
}

void check_refusals() {
  CudaPagedAttentionArgs a;
  a.num_seqs = 1, a.num_tokens = 1, a.max_blocks = 1, a.block_size = 16, a.n_heads = 8, a.n_kv_heads = 8;
  a.head_dim = 128, a.max_kv_len = 16, a.kv_dtype = KvDtype::kF16;
  auto refused = [](const CudaPagedAttentionArgs& x, const char* needle) {
    const pagoda::Status st = paged_attention_cuda(x, nullptr, 0);
    CHECK(!st.ok() && st.error().message.find(needle) != std::string::npos, "expected an error naming '%s', got '%s'",
          needle, st.ok() ? "success" : st.error().message.c_str());
  };
  CudaPagedAttentionArgs b = a;
  b.kv_dtype = KvDtype::kQ8_0;
  refused(b, "q8_0");
  b = a;
  b.head_dim = 96;
  refused(b, "head size 96");
  b = a;
  b.n_heads = 32, b.n_kv_heads = 2;
  refused(b, "16 query heads per KV head");
  b = a;
  b.n_heads = 9, b.n_kv_heads = 2;
  refused(b, "do not divide");
  b = a;
  b.max_kv_len = 1000;  // several segments: needs a workspace
  refused(b, "workspace");
  b = a;
  b.max_kv_len = 4 << 20;  // more segments than the fold's shared memory holds
  refused(b, "4194304 keys per sequence");
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;  // ctest SKIP_RETURN_CODE
  }
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "device properties");
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);

  check_refusals();
  // Lengths cross segments (256 keys, 512 for heads of <= 64 values) and blocks; one sequence runs a prefill chunk.
  const std::vector<int32_t> lens = {1, 17, 255, 256, 257, 513, 1000, 2100};
  const std::vector<int32_t> q_lens = {1, 1, 1, 1, 1, 7, 1, 1};
  const std::vector<int32_t> begins = {0, 3, 0, 100, 1, 0, 300, 777};
  check_shape("llama-8b", {32, 8, 128, KvDtype::kF16}, lens, q_lens, begins, 16, 7, 1);
  check_shape("llama-8b bf16", {32, 8, 128, KvDtype::kBF16}, lens, q_lens, begins, 32, 16, 2);
  check_shape("smollm2", {9, 3, 64, KvDtype::kF16}, lens, q_lens, begins, 16, 1, 3);
  check_shape("smollm2 f32", {9, 3, 64, KvDtype::kF32}, lens, q_lens, begins, 256, 5, 4);
  check_shape("stories260K", {8, 4, 8, KvDtype::kF32}, lens, q_lens, begins, 1, 16, 5);
  check_shape("group 8, d256", {16, 2, 256, KvDtype::kBF16}, lens, q_lens, begins, 16, 64, 6);
  check_shape("group 5, d32", {10, 2, 32, KvDtype::kF16}, lens, q_lens, begins, 8, 3, 7);
  check_shape("mha, d16", {4, 4, 16, KvDtype::kF32}, lens, q_lens, begins, 4, 9, 8);
  // Peaked softmax (scores up to ~40): the max subtraction and the fold's rescaling matter.
  check_shape("peaked", {8, 2, 64, KvDtype::kF16}, lens, q_lens, begins, 16, 32, 10, 12.0f);
  // Long context: 128 segments folded, a prefill chunk at its end, and kv_begin inside a segment.
  check_shape("long", {32, 8, 128, KvDtype::kF16}, {32768, 4099}, {1, 3}, {0, 1111}, 16, 128, 9);
  check_shape("long smollm2", {9, 3, 64, KvDtype::kBF16}, {40000, 1025}, {1, 2}, {0, 513}, 32, 16, 11);

  std::printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
