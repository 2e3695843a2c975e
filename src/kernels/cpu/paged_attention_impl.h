// The fused paged-attention kernel, generic over a "16 floats" vector type, so that the AVX-512, AVX2 and portable
// builds run the same arithmetic and give the same bits (the sources are compiled with -ffp-contract=off; every
// fused multiply-add is explicit).
//
// Isa provides a type V of 16 floats and:
//   zero(), set1(f), load(p, n) (lanes >= n are 0), store(p, v), add, sub, mul, max, fma(a, b, c) = a * b + c
//   (one rounding), round_nearest(v) (ties to even), pow2i(v) (2^v for integral v in [-126, 127]),
//   reduce_sum(v) with the fixed tree below, reduce_sum16(d) (lane i: reduce_sum(d[i]), bitwise), reduce_max(v);
//   and the exact conversions of stored K/V: load_f16(p, n), load_bf16(p, n), load_i8(p) (16 int8), f16(bits).
//   kRegisterVectors: how many V fit in the register file (sizes tile_steps' groups of states).
// reduce_sum tree: u[i] = l[i] + l[i+8] (i < 8); v[i] = u[i] + u[i+4] (i < 4); w[i] = v[i] + v[i+2] (i < 2);
// sum = w[0] + w[1].
//
// The reduction order, defined once (docs/kernels.md, "Attention reduction order"): a query's keys, counted from
// its first key, fall into segments of kKeySegment logical positions (never physical blocks); each segment is an
// online softmax over its tiles of kKeyTile keys, in logical order, started afresh; the segments' partial states
// (max, sum, weighted values) are folded left to right by fold_partial, and the result is the folded values over
// the folded sum. Whether one thread runs the segments one after the other or split-KV decode runs them on several
// threads and folds their saved states afterwards, every operation is the same, so the result does not depend on
// the block size, the batch, the thread count or the split.
#pragma once

#include "kernels/cpu/isa_namespace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/cpu/paged_attention.h"

namespace pagoda::inline PAGODA_ISA_NAMESPACE::attention_impl {

constexpr int kMaxHeadVecs = 16;  // head_dim <= 256
constexpr int kMaxGroup = 8;      // query heads per fused job (more share a KV head: several jobs)
constexpr int32_t kQueryGroup = 8;  // consecutive prefill queries of a sequence per fused job

struct Job {
  int32_t seq;
  int32_t token;     // row in q / out
  int32_t n_keys;    // the query attends to logical keys [key_begin, n_keys)
  int32_t head;      // the (first) query head
  int32_t key_begin;
  int32_t head_count = 1;  // fused kernel: heads head .. head + head_count - 1, all of one KV head
  int32_t kv_head_count = 1;  // fused decode: the job is kv_head_count consecutive KV heads, head_count heads each
                              // (all of each one's heads), read a tile of keys at a time (see run_tiles)
  int32_t cascade_begin = 0, cascade_count = 0;  // fused kernel: a cascade's members (see run_job)
  int32_t shared_end = 0;                        // keys [0, shared_end) shared by the cascade's members
  int32_t segment = -1;  // split-KV: >= 0 runs only this segment of the keys and saves its heads' states
  int64_t scratch = 0;   // split-KV: the first of those saved states ([head of the group]) in the scratch buffer
  int32_t query_count = 1;  // fused kernel, prefill: tokens token .. token + query_count - 1 of the sequence, the
                            // next always attending to one key more (n_keys is the first one's)
  int32_t thread = -1;  // >= 0: the thread that runs it (thread_share_jobs); -1: dealt round-robin
};

// Split-KV decode: one (token, head group) whose segments ran as separate jobs; their states lie in the scratch
// buffer from `first` on as [segment][head of the group], to be folded in order.
struct SplitUnit {
  int32_t token, head, head_count, segments;
  int64_t first;
};

// Segments of keys a job attends to.
inline int32_t segments_of(const Job& j) { return (j.n_keys - j.key_begin + kKeySegment - 1) / kKeySegment; }

inline void collect_jobs(const PagedAttentionArgs& a, std::vector<Job>& jobs) {
  jobs.clear();
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q_begin = a.cu_seqlens_q[s], q_len = a.cu_seqlens_q[s + 1] - q_begin;
    const int32_t key_begin = a.kv_begin ? a.kv_begin[s] : 0;
    for (int32_t i = 0; i < q_len; ++i)
      for (int32_t h = 0; h < a.n_heads; ++h)
        jobs.push_back({s, q_begin + i, a.seq_lens_kv[s] - q_len + i + 1, h, key_begin});
  }
}

// Bytes of one head's K (or V) row as stored.
inline int64_t head_bytes(const PagedAttentionArgs& a) { return kv_bytes(a.kv_dtype, a.head_dim); }

// Address of the K (or V) row of logical position p of sequence s, kv head kvh, as stored.
inline const uint8_t* kv_row(const PagedAttentionArgs& a, const void* cache, int32_t s, int32_t p, int32_t kvh) {
  const int32_t block = a.block_table[static_cast<int64_t>(s) * a.max_blocks + p / a.block_size];
  const int64_t slot = static_cast<int64_t>(block) * a.block_size + p % a.block_size;
  return static_cast<const uint8_t*>(cache) + (slot * a.n_kv_heads + kvh) * head_bytes(a);
}

// Values 16 * j .. 16 * j + n - 1 of a stored head row as f32 (lanes >= n are 0), exactly (kv/kv_dtype.h).
template <class Isa, KvDtype kT>
inline typename Isa::V load_kv(const uint8_t* row, int j, int n) {
  if constexpr (kT == KvDtype::kF32) {
    return Isa::load(reinterpret_cast<const float*>(row) + 16 * j, n);
  } else if constexpr (kT == KvDtype::kF16) {
    return Isa::load_f16(reinterpret_cast<const uint16_t*>(row) + 16 * j, n);
  } else if constexpr (kT == KvDtype::kBF16) {
    return Isa::load_bf16(reinterpret_cast<const uint16_t*>(row) + 16 * j, n);
  } else {  // Q8_0: head_dim % 32 == 0, so n == 16 and a vector is one half of a block
    const uint8_t* block = row + (j / 2) * kKvQ8BlockBytes;
    uint16_t d;
    std::memcpy(&d, block, 2);
    return Isa::mul(Isa::load_i8(reinterpret_cast<const int8_t*>(block + 2 + 16 * (j % 2))), Isa::set1(Isa::f16(d)));
  }
}

// e^x for x <= 88 (inputs below -87 are clamped there: results ~1e-38 instead of smaller). Cody-Waite range
// reduction and a degree-5 polynomial (the Cephes expf coefficients); about 1 ulp.
template <class Isa>
__attribute__((always_inline)) inline typename Isa::V exp_approx(typename Isa::V x) {
  using V = typename Isa::V;
  x = Isa::max(x, Isa::set1(-87.0f));
  x = Isa::min(x, Isa::set1(88.0f));
  const V n = Isa::round_nearest(Isa::mul(x, Isa::set1(1.44269504088896341f)));
  V r = Isa::fma(n, Isa::set1(-0.693359375f), x);
  r = Isa::fma(n, Isa::set1(2.12194440e-4f), r);
  V p = Isa::set1(1.9875691500e-4f);
  p = Isa::fma(p, r, Isa::set1(1.3981999507e-3f));
  p = Isa::fma(p, r, Isa::set1(8.3334519073e-3f));
  p = Isa::fma(p, r, Isa::set1(4.1665795894e-2f));
  p = Isa::fma(p, r, Isa::set1(1.6666665459e-1f));
  p = Isa::fma(p, r, Isa::set1(5.0000001201e-1f));
  V y = Isa::fma(p, Isa::mul(r, r), r);
  y = Isa::add(y, Isa::set1(1.0f));
  return Isa::mul(y, Isa::pow2i(n));
}

// The softmax state of some keys: the largest score, the sum of e^(score - max) and the values weighted by it.
template <class Isa>
struct Partial {
  typename Isa::V acc[kMaxHeadVecs];
  float max, sum;
};

// One query head's running state: its query, the state of the segment being run (`cur`, an online softmax over
// `cur_keys` keys so far) and the fold of the segments before it (`merged`, once `has_merged`).
template <class Isa>
struct HeadState {
  typename Isa::V q[kMaxHeadVecs];
  Partial<Isa> cur, merged;
  int32_t cur_keys;
  bool has_merged;
  int32_t token, head;
};

// Folds the next segment's state `p` into `m` (the segments before it): both rescaled to the larger maximum. Every
// split and unsplit run folds the same states in the same order through this one function.
template <class Isa>
inline void fold_partial(Partial<Isa>& m, bool& has_merged, const Partial<Isa>& p, int nv) {
  if (!has_merged) {
    m.max = p.max;
    m.sum = p.sum;
    for (int j = 0; j < nv; ++j) m.acc[j] = p.acc[j];
    has_merged = true;
    return;
  }
  const float new_max = std::max(m.max, p.max);
  alignas(64) float cm[16], cp[16];
  Isa::store(cm, exp_approx<Isa>(Isa::set1(m.max - new_max)));
  Isa::store(cp, exp_approx<Isa>(Isa::set1(p.max - new_max)));
  m.sum = m.sum * cm[0] + p.sum * cp[0];
  const typename Isa::V vm = Isa::set1(cm[0]), vp = Isa::set1(cp[0]);
  for (int j = 0; j < nv; ++j) m.acc[j] = Isa::fma(p.acc[j], vp, Isa::mul(m.acc[j], vm));
  m.max = new_max;
}

template <class Isa>
inline void reset_partial(Partial<Isa>& p, int nv) {
  for (int j = 0; j < nv; ++j) p.acc[j] = Isa::zero();
  p.max = -INFINITY;
  p.sum = 0.0f;
}

// The K/V row addresses of `n` consecutive logical keys of one sequence, walking its block table from
// (block_index, offset), which it advances.
struct TileRows {
  const uint8_t* k[kKeyTile];
  const uint8_t* v[kKeyTile];
  int32_t n;
};

inline void locate_tile(const PagedAttentionArgs& a, const int32_t* table, int64_t row_stride, int64_t head_offset,
                        int32_t n, int32_t& block_index, int32_t& offset, TileRows& rows) {
  const uint8_t* k_cache = static_cast<const uint8_t*>(a.k_cache) + head_offset;
  const uint8_t* v_cache = static_cast<const uint8_t*>(a.v_cache) + head_offset;
  rows.n = n;
  // A block's slots at a time: consecutive slots are row_stride bytes apart.
  for (int32_t i = 0; i < n;) {
    const int32_t run = std::min(n - i, a.block_size - offset);
    const int64_t first = (static_cast<int64_t>(table[block_index]) * a.block_size + offset) * row_stride;
    const uint8_t* k = k_cache + first;
    const uint8_t* v = v_cache + first;
    for (const int32_t end = i + run; i < end; ++i, k += row_stride, v += row_stride) rows.k[i] = k, rows.v[i] = v;
    offset += run;
    if (offset == a.block_size) {
      offset = 0;
      ++block_index;
    }
  }
}

template <class Isa, int kVecs>
void init_state(const PagedAttentionArgs& a, int32_t token, int32_t head, HeadState<Isa>& st) {
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  const float* q = a.q + (static_cast<int64_t>(token) * a.n_heads + head) * D;
  for (int j = 0; j < nv; ++j) st.q[j] = Isa::load(q + 16 * j, (kVecs > 0 ? 16 : std::min(16, D - 16 * j)));
  reset_partial<Isa>(st.cur, nv);
  st.cur_keys = 0;
  st.has_merged = false;
  st.token = token;
  st.head = head;
}

// The online-softmax part of a tile step, in three parts (softmax_tile runs them for one head; tile_steps_group for
// several heads at once, with one vector of exponentials for all their corrections: the same operations lane by
// lane, so the same bits).
// tile_max: the largest score of the tile (scores [kKeyTile], set to -inf past n here).
template <class Isa>
__attribute__((always_inline)) inline float tile_max(float* scores, int32_t n) {
  for (int32_t i = n; i < kKeyTile; ++i) scores[i] = -INFINITY;
  return Isa::reduce_max(Isa::max(Isa::load(scores, 16), Isa::load(scores + 16, 16)));
}

// The correction that rescales what was accumulated at maximum `old_max` to `new_max`, from its lane of
// exp_approx(old_max - new_max) (`e`): nothing was accumulated while old_max is -inf.
inline float tile_correction(float old_max, float e) { return old_max == -INFINITY ? 0.0f : e; }

// weights [kKeyTile] = e^(score - new_max) (0 past n); cur.sum rescaled by `correction` plus the tile's sum.
template <class Isa>
__attribute__((always_inline)) inline void tile_weights(const float* scores, float* weights, int32_t n, float new_max,
                                                        float correction, Partial<Isa>& cur) {
  using V = typename Isa::V;
  const V m = Isa::set1(new_max);
  Isa::store(weights, exp_approx<Isa>(Isa::sub(Isa::load(scores, 16), m)));
  Isa::store(weights + 16, exp_approx<Isa>(Isa::sub(Isa::load(scores + 16, 16), m)));
  for (int32_t i = n; i < kKeyTile; ++i) weights[i] = 0.0f;
  const float tile_sum = Isa::reduce_sum(Isa::load(weights, 16)) + Isa::reduce_sum(Isa::load(weights + 16, 16));
  cur.sum = cur.sum * correction + tile_sum;
}

// The online-softmax part of a tile step for one head: scores [kKeyTile] (set to -inf past n here) -> weights
// [kKeyTile] (e^(score - new maximum), 0 past n); cur.sum rescaled to the new maximum plus the tile's sum. Returns
// the correction that rescales the values accumulated so far; the new maximum goes to *new_max (cur.max is the
// caller's to set once the values are accumulated).
template <class Isa>
inline float softmax_tile(float* scores, float* weights, int32_t n, Partial<Isa>& cur, float* new_max) {
  static_assert(kKeyTile == 32, "the tile is two vectors of 16");
  *new_max = std::max(cur.max, tile_max<Isa>(scores, n));
  // Online softmax: rescale what has been accumulated so far to the new maximum, once per tile.
  alignas(64) float correction_lanes[16];
  Isa::store(correction_lanes, exp_approx<Isa>(Isa::set1(cur.max - *new_max)));
  const float correction = tile_correction(cur.max, correction_lanes[0]);
  tile_weights<Isa>(scores, weights, n, *new_max, correction, cur);
  return correction;
}

// One tile of keys for one head: scores, the online-softmax rescale, the weighted values, into the current segment's
// state. This sequence of operations, tile after tile of a segment in logical order, is the kernel's definition:
// however jobs group heads, sequences or segments, each head runs exactly it.
template <class Isa, int kVecs, KvDtype kT>
void tile_step(const PagedAttentionArgs& a, const TileRows& rows, HeadState<Isa>& st) {
  using V = typename Isa::V;
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  static_assert(kKeyTile == 32, "the tile is two vectors of 16");
  alignas(64) float scores[kKeyTile];
  alignas(64) float weights[kKeyTile];
  const int32_t n = rows.n;
  V qv[kMaxHeadVecs], acc[kMaxHeadVecs];
  Partial<Isa>& cur = st.cur;
  for (int j = 0; j < nv; ++j) qv[j] = st.q[j], acc[j] = cur.acc[j];
  // Scores of this tile of keys, read in place through the block table: per key, the products summed lane-wise over
  // the head's vectors, then reduce_sum's tree (16 keys at a time: reduce_sum16) times the scale.
  const V scale = Isa::set1(a.scale);
  for (int32_t i0 = 0; i0 < n; i0 += 16) {
    V d[16];
    for (int32_t i = 0; i < 16; ++i) {
      d[i] = Isa::zero();
      if (i0 + i >= n) continue;
      const uint8_t* k = rows.k[i0 + i];
      for (int j = 0; j < nv; ++j)
        d[i] = Isa::fma(qv[j], load_kv<Isa, kT>(k, j, (kVecs > 0 ? 16 : std::min(16, D - 16 * j))), d[i]);
    }
    Isa::store(scores + i0, Isa::mul(Isa::reduce_sum16(d), scale));
  }
  float new_max;
  const V c = Isa::set1(softmax_tile<Isa>(scores, weights, n, cur, &new_max));
  for (int j = 0; j < nv; ++j) acc[j] = Isa::mul(acc[j], c);
  for (int32_t i = 0; i < n; ++i) {
    const uint8_t* v = rows.v[i];
    const V w = Isa::set1(weights[i]);
    for (int j = 0; j < nv; ++j)
      acc[j] = Isa::fma(w, load_kv<Isa, kT>(v, j, (kVecs > 0 ? 16 : std::min(16, D - 16 * j))), acc[j]);
  }
  cur.max = new_max;
  for (int j = 0; j < nv; ++j) cur.acc[j] = acc[j];
  st.cur_keys += n;
}

// States whose values one pass over a tile's V rows weighs (tile_steps_group): as many as leave their accumulators
// ([states][kVecs]), one V row and a weight in registers, at most 4. (AVX-512, head_dim 64: 4; AVX2: 1.)
template <class Isa, int kVecs>
constexpr int value_group() {
  const int fit = kVecs > 0 ? (Isa::kRegisterVectors - kVecs - 2) / kVecs : 1;
  return fit < 1 ? 1 : fit > 4 ? 4 : fit;
}

// States of a tile stepped together by tile_steps.
constexpr int kStateGroup = 4;

// The scores of keys [i0, i0 + 16) of a tile for one query (rows of kT; keys at or past n contribute 0 products):
// tile_step's products and reduce_sum16. kUnrolled (where the register file holds the 16 products and the query):
// unrolled, so the products stay in registers; else a loop (they go through memory, as in tile_step).
template <class Isa, int kVecs, KvDtype kT, bool kFull, bool kUnrolled>
__attribute__((always_inline)) inline typename Isa::V scores16(const typename Isa::V* q, const TileRows& rows,
                                                               int32_t i0, int32_t n) {
  using V = typename Isa::V;
  V d[16];
  if constexpr (kUnrolled) {
#pragma GCC unroll 16
    for (int32_t i = 0; i < 16; ++i) {
      V di = Isa::zero();
      if (kFull || i0 + i < n) {
#pragma GCC unroll 16
        for (int j = 0; j < kVecs; ++j) di = Isa::fma(q[j], load_kv<Isa, kT>(rows.k[i0 + i], j, 16), di);
      }
      d[i] = di;
    }
  } else {
    for (int32_t i = 0; i < 16; ++i) {
      d[i] = Isa::zero();
      if (!kFull && i0 + i >= n) continue;
      for (int j = 0; j < kVecs; ++j) d[i] = Isa::fma(q[j], load_kv<Isa, kT>(rows.k[i0 + i], j, 16), d[i]);
    }
  }
  return Isa::reduce_sum16(d);
}

// Rows of a later tile to fetch into the cache while this one's values are weighed: with key i, the K and V lines of
// ahead->k[i] + offset, ahead->v[i] + offset (row_bytes each, as stored; offset picks a KV head of the slots). Spread over the loop rather than issued at once at the
// tile's start, the requests overlap the arithmetic instead of queueing behind one another (docs/PERFORMANCE.md).
struct TilePrefetch {
  const TileRows* ahead = nullptr;
  int64_t row_bytes = 0;
  int64_t offset = 0;
};

// The values of kStates states over a tile of rows of kT (tile_step's last part): each state's accumulators rescaled by
// its correction, then every key's V row, loaded once, weighted into each state's accumulators, key by key.
template <class Isa, int kVecs, KvDtype kT, int kStates>
__attribute__((always_inline)) inline void weigh_values(const TileRows& rows, const float (*weights)[kKeyTile],
                                                        const float* correction, HeadState<Isa>* states,
                                                        TilePrefetch prefetch) {
  using V = typename Isa::V;
  V acc[kStates][kVecs];
#pragma GCC unroll 4
  for (int g = 0; g < kStates; ++g) {
    const V c = Isa::set1(correction[g]);
#pragma GCC unroll 16
    for (int j = 0; j < kVecs; ++j) acc[g][j] = Isa::mul(states[g].cur.acc[j], c);
  }
  const int32_t ahead_n = prefetch.ahead != nullptr ? prefetch.ahead->n : 0;
  for (int32_t i = 0; i < rows.n; ++i) {
    if (i < ahead_n)
      for (int64_t off = prefetch.offset; off < prefetch.offset + prefetch.row_bytes; off += 64) {
        __builtin_prefetch(prefetch.ahead->k[i] + off, 0, 3);
        __builtin_prefetch(prefetch.ahead->v[i] + off, 0, 3);
      }
    V vr[kVecs];
#pragma GCC unroll 16
    for (int j = 0; j < kVecs; ++j) vr[j] = load_kv<Isa, kT>(rows.v[i], j, 16);
#pragma GCC unroll 4
    for (int g = 0; g < kStates; ++g) {
      const V w = Isa::set1(weights[g][i]);
#pragma GCC unroll 16
      for (int j = 0; j < kVecs; ++j) acc[g][j] = Isa::fma(w, vr[j], acc[g][j]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < kStates; ++g)
#pragma GCC unroll 16
    for (int j = 0; j < kVecs; ++j) states[g].cur.acc[j] = acc[g][j];
}

// tile_step for kGroup states over the same tile of rows of kT (staged as f32, or as stored): each state's operations
// exactly tile_step's, in its order, so the same bits. Only the interleaving differs: every state's scores and tile
// maximum first, then one vector exponential for every state's correction (lane g: state g's), then each state's
// weights (the softmax is a chain of dependent steps; the states' chains overlap), then the values, value_group()
// states per pass over the V rows. A state's weighted values are kVecs chains of dependent
// multiply-adds (4 at head_dim 64), too few to keep two FMA units busy; a pass of 4 states runs 16 side by side and
// loads each V row once. (tile_step as GCC compiles it also keeps its products and accumulators in memory.)
// Prefill attention of SmolLM2's shape, Zen 5: docs/PERFORMANCE.md.
template <class Isa, int kVecs, KvDtype kT, int kGroup>
inline void tile_steps_group(const PagedAttentionArgs& a, const TileRows& rows, HeadState<Isa>* states,
                             TilePrefetch prefetch) {
  using V = typename Isa::V;
  static_assert(kVecs > 0, "full vectors only");
  constexpr bool kUnrolled = Isa::kRegisterVectors >= 16 + kVecs + 2;
  constexpr int kPass = value_group<Isa, kVecs>() < kGroup ? value_group<Isa, kVecs>() : kGroup;
  static_assert(kGroup <= 16, "one vector of corrections");
  alignas(64) float scores[kGroup][kKeyTile];
  alignas(64) float weights[kGroup][kKeyTile];
  alignas(64) float correction[16];
  alignas(64) float max_step[16] = {};  // [state] old maximum - new maximum
  float old_max[kGroup];
  const int32_t n = rows.n;
  const V scale = Isa::set1(a.scale);
  for (int g = 0; g < kGroup; ++g) {
    HeadState<Isa>& st = states[g];
    V q[kVecs];
#pragma GCC unroll 16
    for (int j = 0; j < kVecs; ++j) q[j] = st.q[j];
    if (n == kKeyTile) {
      Isa::store(scores[g], Isa::mul(scores16<Isa, kVecs, kT, true, kUnrolled>(q, rows, 0, n), scale));
      Isa::store(scores[g] + 16, Isa::mul(scores16<Isa, kVecs, kT, true, kUnrolled>(q, rows, 16, n), scale));
    } else {
      for (int32_t i0 = 0; i0 < n; i0 += 16)
        Isa::store(scores[g] + i0, Isa::mul(scores16<Isa, kVecs, kT, false, kUnrolled>(q, rows, i0, n), scale));
    }
    const float new_max = std::max(st.cur.max, tile_max<Isa>(scores[g], n));
    old_max[g] = st.cur.max;
    max_step[g] = st.cur.max - new_max;
    st.cur.max = new_max;  // (read again only by the next tile)
  }
  // softmax_tile's corrections, every state's in one vector (lane g: exp_approx of state g's step).
  Isa::store(correction, exp_approx<Isa>(Isa::load(max_step, 16)));
  for (int g = 0; g < kGroup; ++g) {
    Partial<Isa>& cur = states[g].cur;
    correction[g] = tile_correction(old_max[g], correction[g]);
    tile_weights<Isa>(scores[g], weights[g], n, cur.max, correction[g], cur);
  }
  int g = 0;
  for (; g + kPass <= kGroup; g += kPass, prefetch = {})  // the prefetches with the first pass only
    weigh_values<Isa, kVecs, kT, kPass>(rows, weights + g, correction + g, states + g, prefetch);
  if constexpr (kGroup % kPass != 0)
    weigh_values<Isa, kVecs, kT, kGroup % kPass>(rows, weights + g, correction + g, states + g, prefetch);
  for (int s = 0; s < kGroup; ++s) states[s].cur_keys += n;
}

// tile_step for `count` states over one tile of rows of kT, kStateGroup at a time (tile_steps_group); `prefetch`
// goes with the first group's values.
template <class Isa, int kVecs, KvDtype kT>
void tile_steps(const PagedAttentionArgs& a, const TileRows& rows, HeadState<Isa>* states, int count,
                TilePrefetch prefetch = {}) {
  int g = 0;
  for (; g + kStateGroup <= count; g += kStateGroup, prefetch = {})
    tile_steps_group<Isa, kVecs, kT, kStateGroup>(a, rows, states + g, prefetch);
  switch (count - g) {
    case 1: return tile_steps_group<Isa, kVecs, kT, 1>(a, rows, states + g, prefetch);
    case 2: return tile_steps_group<Isa, kVecs, kT, 2>(a, rows, states + g, prefetch);
    case 3: return tile_steps_group<Isa, kVecs, kT, 3>(a, rows, states + g, prefetch);
    default: return;
  }
}

// Ends the current segment: its state folded into the segments before it, and a fresh one started.
template <class Isa>
inline void close_segment(HeadState<Isa>& st, int nv) {
  if (st.cur_keys == 0) return;
  fold_partial<Isa>(st.merged, st.has_merged, st.cur, nv);
  reset_partial<Isa>(st.cur, nv);
  st.cur_keys = 0;
}

// The output of a query head from the fold of all its segments: values over sum.
template <class Isa, int kVecs>
void write_output(const PagedAttentionArgs& a, int32_t token, int32_t head, const Partial<Isa>& m) {
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  float* out = a.out + (static_cast<int64_t>(token) * a.n_heads + head) * D;
  const typename Isa::V inv = Isa::set1(1.0f / m.sum);
  alignas(64) float lanes[16];
  for (int j = 0; j < nv; ++j) {
    const int cnt = (kVecs > 0 ? 16 : std::min(16, D - 16 * j));
    Isa::store(lanes, Isa::mul(m.acc[j], inv));
    std::copy(lanes, lanes + cnt, out + 16 * j);
  }
}

template <class Isa, int kVecs>
void finish_state(const PagedAttentionArgs& a, HeadState<Isa>& st) {
  const int nv = kVecs > 0 ? kVecs : (a.head_dim + 15) / 16;
  close_segment<Isa>(st, nv);
  write_output<Isa, kVecs>(a, st.token, st.head, st.merged);
}

// A tile's K and V rows converted once to f32 (`k_f32`, `v_f32`: [kKeyTile][16 * nv], lanes past head_dim zero),
// with `staged` pointing at them. Every stored type converts to f32 exactly (kv/kv_dtype.h), so a state stepped over
// the staged rows as f32 computes with the same values, in the same order, as over the cache: the same bits, without
// converting the stored type again for every head and query that reads the tile.
template <class Isa, int kVecs, KvDtype kT>
__attribute__((always_inline)) inline void stage_tile(const PagedAttentionArgs& a, const TileRows& rows, float* k_f32, float* v_f32, TileRows& staged) {
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  staged.n = rows.n;
  for (int32_t i = 0; i < rows.n; ++i) {
    float* k = k_f32 + static_cast<int64_t>(i) * 16 * nv;
    float* v = v_f32 + static_cast<int64_t>(i) * 16 * nv;
    for (int j = 0; j < nv; ++j) {
      const int n = kVecs > 0 ? 16 : std::min(16, D - 16 * j);
      Isa::store(k + 16 * j, load_kv<Isa, kT>(rows.k[i], j, n));
      Isa::store(v + 16 * j, load_kv<Isa, kT>(rows.v[i], j, n));
    }
    staged.k[i] = reinterpret_cast<const uint8_t*>(k);
    staged.v[i] = reinterpret_cast<const uint8_t*>(v);
  }
}

// The tiles of keys [from, n_keys) of one sequence for the heads in `states` ([n_kvh][count]: `count` heads of each
// of the KV heads kvh .. kvh + n_kvh - 1), whose keys start at key_begin (segments count from there; `from -
// key_begin` is a multiple of kKeyTile). With several heads of a KV head and a stored type other than f32, each
// tile is staged as f32 once for all of them. Several KV heads go tile by tile, every KV head of a tile before the
// next tile, so a tile's slots (which store their KV heads side by side) are read whole while they are in cache.
// Each KV head's rows of a later tile are prefetched while it steps this one (one KV head's rows are head_dim values
// out of every slot's n_kv_heads * head_dim, a stride no hardware prefetcher runs ahead of): two KV-head steps on,
// i.e. the tile after next for one KV head, the next tile for several. With full vectors the requests go with the
// values' keys (TilePrefetch); single-sequence decode attention at 4,032 keys (SmolLM2's shape, from memory, Zen 5):
// 3.8-3.9 -> 3.1-3.3 ms a step, 16 sequences at 192 keys 3.4-3.5 -> 2.5 ms (docs/PERFORMANCE.md). Each tile's
// rows are located once, when it is first prefetched.
template <class Isa, int kVecs, KvDtype kT>
void run_tiles(const PagedAttentionArgs& a, int32_t seq, int32_t kvh, int32_t key_begin, int32_t from,
               int32_t n_keys, HeadState<Isa>* states, int count, int n_kvh = 1) {
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  const int64_t hb = kv_bytes(kT, D);
  const int32_t* table = a.block_table + static_cast<int64_t>(seq) * a.max_blocks;
  const bool stage = kT != KvDtype::kF32 && count >= 2;
  constexpr int kStagedFloats = kT == KvDtype::kF32 ? 16 : kKeyTile * 16 * (kVecs > 0 ? kVecs : kMaxHeadVecs);
  alignas(64) float k_f32[kStagedFloats];  // [kKeyTile][16 * nv]
  alignas(64) float v_f32[kStagedFloats];
  // Full vectors prefetch two KV-head steps ahead; otherwise (tile_step) several KV heads the next tile, at once.
  const int32_t ahead_tiles = kVecs > 0 ? (n_kvh > 1 ? 1 : 2) : (n_kvh > 1 ? 1 : 0);
  // The tiles located so far, by tile index mod 3 (this one and up to two ahead): each is located once, as the tile
  // to prefetch and then as the one to step.
  TileRows located[3];
  int32_t located_at[3] = {-1, -1, -1};  // the first key of the tile each holds
  auto locate = [&](int32_t t) -> const TileRows& {
    TileRows& r = located[((t - from) / kKeyTile) % 3];
    int32_t& at = located_at[((t - from) / kKeyTile) % 3];
    if (at != t) {
      int32_t b = t / a.block_size, o = t % a.block_size;
      locate_tile(a, table, a.n_kv_heads * hb, kvh * hb, std::min(kKeyTile, n_keys - t), b, o, r);
      at = t;
    }
    return r;
  };
  static_assert(kKeyTile % 16 == 0);
  TileRows shifted, staged;
  for (int32_t t0 = from; t0 < n_keys; t0 += kKeyTile) {
    if ((t0 - key_begin) % kKeySegment == 0)
      for (int g = 0; g < n_kvh * count; ++g) close_segment<Isa>(states[g], nv);
    const TileRows& rows = locate(t0);
    const int32_t p = t0 + ahead_tiles * kKeyTile;
    const TileRows* ahead = ahead_tiles > 0 && p < n_keys ? &locate(p) : nullptr;
    for (int h = 0; h < n_kvh; ++h) {
      const TileRows* head_rows = &rows;
      if (h > 0) {  // the next KV head's rows: hb bytes on in every slot
        shifted.n = rows.n;
        for (int32_t i = 0; i < rows.n; ++i) shifted.k[i] = rows.k[i] + h * hb, shifted.v[i] = rows.v[i] + h * hb;
        head_rows = &shifted;
      }
      const TilePrefetch prefetch{ahead, hb, h * hb};  // this KV head's rows of `ahead`
      if constexpr (kVecs == 0) {  // at once
        for (int32_t i = 0; ahead != nullptr && i < ahead->n; ++i)
          for (int64_t off = h * hb; off < (h + 1) * hb; off += 64) {
            __builtin_prefetch(ahead->k[i] + off, 0, 3);
            __builtin_prefetch(ahead->v[i] + off, 0, 3);
          }
      }
      HeadState<Isa>* head_states = states + h * count;
      if (stage) {
        stage_tile<Isa, kVecs, kT>(a, *head_rows, k_f32, v_f32, staged);
        if constexpr (kVecs > 0)
          tile_steps<Isa, kVecs, KvDtype::kF32>(a, staged, head_states, count, prefetch);
        else
          for (int g = 0; g < count; ++g) tile_step<Isa, kVecs, KvDtype::kF32>(a, staged, head_states[g]);
      } else if constexpr (kVecs > 0) {
        tile_steps<Isa, kVecs, kT>(a, *head_rows, head_states, count, prefetch);
      } else {
        for (int g = 0; g < count; ++g) tile_step<Isa, kVecs, kT>(a, *head_rows, head_states[g]);
      }
    }
  }
}

// A decode query's tiles over every head of the model at once (a whole-slot job of collect_group_jobs, used when
// every KV head has one query head): the keys [from, n_keys) of one sequence, states [n_heads] (head h reads KV
// head h). Every head runs exactly tile_step's operations, in its order, but a tile's K and V are read slot
// after slot, each slot's row of every KV head whole, in address order: first every head's per-key products (kept,
// 16 keys at a time, for reduce_sum16), then each head's softmax, then every head's weighted values key by key
// (each head's accumulators, kept in memory, still walk the keys in order). Against run_tiles' KV head at a time:
// 16-way decode of the 134M F16 model (12 heads, no groups) +3-4% on Zen 5 (docs/PERFORMANCE.md).
template <class Isa>
struct WholeSlotScratch {
  struct Vectors {
    typename Isa::V v[kMaxHeadVecs];
  };
  struct Products {
    typename Isa::V d[16];
  };
  std::vector<Products> products;  // [head] 16 keys' lane-wise products
  std::vector<Vectors> acc;        // [head] the values being accumulated
  std::vector<float> scores, weights;  // [head][kKeyTile]
  std::vector<float> new_max;  // [head] the tile's new maximum, set after the values
};

template <class Isa, int kVecs, KvDtype kT>
void run_tiles_whole_slots(const PagedAttentionArgs& a, int32_t seq, int32_t key_begin, int32_t from, int32_t n_keys,
                           HeadState<Isa>* states) {
  using V = typename Isa::V;
  const int32_t D = kVecs > 0 ? 16 * kVecs : a.head_dim;
  const int nv = kVecs > 0 ? kVecs : (D + 15) / 16;
  const int H = a.n_heads;  // == a.n_kv_heads
  const int64_t hb = kv_bytes(kT, D);
  const int32_t* table = a.block_table + static_cast<int64_t>(seq) * a.max_blocks;
  int32_t block_index = from / a.block_size, offset = from % a.block_size;
  thread_local WholeSlotScratch<Isa> w;
  w.products.resize(H);
  w.acc.resize(H);
  w.scores.resize(static_cast<size_t>(H) * kKeyTile);
  w.weights.resize(static_cast<size_t>(H) * kKeyTile);
  w.new_max.resize(H);
  auto lanes = [&](int j) { return kVecs > 0 ? 16 : std::min(16, D - 16 * j); };
  const V scale = Isa::set1(a.scale);
  TileRows rows;
  for (int32_t t0 = from; t0 < n_keys; t0 += kKeyTile) {
    if ((t0 - key_begin) % kKeySegment == 0)
      for (int h = 0; h < H; ++h) close_segment<Isa>(states[h], nv);
    locate_tile(a, table, a.n_kv_heads * hb, 0, std::min(kKeyTile, n_keys - t0), block_index, offset, rows);
    const int32_t n = rows.n;
    // Scores: per key, in address order, every head's products with its K row (lanes summed below).
    for (int32_t i0 = 0; i0 < n; i0 += 16) {
      for (int32_t i = 0; i < 16; ++i)
        for (int h = 0; h < H; ++h) {
          V d = Isa::zero();
          if (i0 + i < n)
            for (int j = 0; j < nv; ++j)
              d = Isa::fma(states[h].q[j], load_kv<Isa, kT>(rows.k[i0 + i] + h * hb, j, lanes(j)), d);
          w.products[h].d[i] = d;
        }
      for (int h = 0; h < H; ++h)
        Isa::store(&w.scores[static_cast<size_t>(h) * kKeyTile + i0], Isa::mul(Isa::reduce_sum16(w.products[h].d), scale));
    }
    // Each head's online softmax, as tile_step.
    for (int h = 0; h < H; ++h) {
      float* scores = &w.scores[static_cast<size_t>(h) * kKeyTile];
      float* weights = &w.weights[static_cast<size_t>(h) * kKeyTile];
      Partial<Isa>& cur = states[h].cur;
      const V c = Isa::set1(softmax_tile<Isa>(scores, weights, n, cur, &w.new_max[h]));
      for (int j = 0; j < nv; ++j) w.acc[h].v[j] = Isa::mul(cur.acc[j], c);
    }
    // Values: per key, in address order, every head's V row weighted into its accumulators.
    for (int32_t i = 0; i < n; ++i)
      for (int h = 0; h < H; ++h) {
        const V wt = Isa::set1(w.weights[static_cast<size_t>(h) * kKeyTile + i]);
        for (int j = 0; j < nv; ++j)
          w.acc[h].v[j] = Isa::fma(wt, load_kv<Isa, kT>(rows.v[i] + h * hb, j, lanes(j)), w.acc[h].v[j]);
      }
    for (int h = 0; h < H; ++h) {
      Partial<Isa>& cur = states[h].cur;
      cur.max = w.new_max[h];
      for (int j = 0; j < nv; ++j) cur.acc[j] = w.acc[h].v[j];
      states[h].cur_keys += n;
    }
  }
}

// kVecs > 0: head_dim == 16 * kVecs, known at compile time (full vectors, unrolled); 0: any head_dim.
// kT: the stored K/V type.
//
// One job is `job.head_count` query heads of one token that share a KV head (grouped-query attention): each tile of
// keys is located once and its K/V rows, read from memory for the first head, are in L1 for the others. With
// job.cascade_count > 0 it is also several decode sequences whose first job.shared_end keys are the same physical
// blocks (a shared prefix): those tiles are read once for every sequence's heads, then each sequence finishes its
// own keys. Every head runs exactly tile_step's operations in the same order as alone, so neither grouping changes a
// bit; they only stop the same K/V from being streamed once per query head and once per sequence.
//
// With job.segment >= 0 it is one segment of a split (token, head group): its heads' segment states are saved to
// `scratch` (floats, `stride` per state: the values, then max and sum) for fold_split to fold.
template <class Isa, int kVecs, KvDtype kT>
void run_job(const PagedAttentionArgs& a, const Job& job, const std::vector<Job>& members, float* scratch,
             int64_t stride) {
  const int32_t kvh = job.head / (a.n_heads / a.n_kv_heads);
  const int G = job.head_count;
  const int nv = kVecs > 0 ? kVecs : (a.head_dim + 15) / 16;
  if (job.kv_head_count > 1) {
    // Several KV heads, all their heads (consecutive from job.head): a decode query, whole or one segment of it.
    const int total = G * job.kv_head_count;
    thread_local std::vector<HeadState<Isa>> states;  // [KV head of the job][head of the group]
    states.resize(static_cast<size_t>(total));
    for (int g = 0; g < total; ++g) init_state<Isa, kVecs>(a, job.token, job.head + g, states[g]);
    const int32_t from = job.segment >= 0 ? job.key_begin + job.segment * kKeySegment : job.key_begin;
    const int32_t to = job.segment >= 0 ? std::min(job.n_keys, from + kKeySegment) : job.n_keys;
    // One head per KV head: the slots in address order (run_tiles_whole_slots); several: a KV head at a time, its
    // tile staged once for its heads (run_tiles), which measured faster for SmolLM2's groups of 3 (1142-1186
    // against 1176-1184 tok/s, 16-way decode) and slower without groups (the 134M F16 model: 1052-1074 against
    // 1092-1121), on Zen 5, AVX-512.
    if (G == 1)
      run_tiles_whole_slots<Isa, kVecs, kT>(a, job.seq, job.key_begin, from, to, states.data());
    else
      run_tiles<Isa, kVecs, kT>(a, job.seq, kvh, job.key_begin, from, to, states.data(), G, job.kv_head_count);
    for (int g = 0; g < total; ++g) {
      if (job.segment < 0) {
        finish_state<Isa, kVecs>(a, states[g]);
        continue;
      }
      float* p = scratch + (job.scratch + g) * stride;
      for (int j = 0; j < nv; ++j) Isa::store(p + 16 * j, states[g].cur.acc[j]);
      p[16 * nv] = states[g].cur.max;
      p[16 * nv + 1] = states[g].cur.sum;
    }
    return;
  }
  if (job.segment >= 0) {
    HeadState<Isa> states[kMaxGroup];
    for (int g = 0; g < G; ++g) init_state<Isa, kVecs>(a, job.token, job.head + g, states[g]);
    const int32_t from = job.key_begin + job.segment * kKeySegment;
    run_tiles<Isa, kVecs, kT>(a, job.seq, kvh, job.key_begin, from, std::min(job.n_keys, from + kKeySegment), states,
                              G);
    for (int g = 0; g < G; ++g) {
      float* p = scratch + (job.scratch + g) * stride;
      for (int j = 0; j < nv; ++j) Isa::store(p + 16 * j, states[g].cur.acc[j]);
      p[16 * nv] = states[g].cur.max;
      p[16 * nv + 1] = states[g].cur.sum;
    }
    return;
  }
  if (job.query_count > 1) {
    // Consecutive prefill queries: the key tiles whole for all of them run once for every (query, head) state,
    // then each query its own last keys. Each state runs tile_step's operations exactly as alone.
    thread_local std::vector<HeadState<Isa>> states;  // [query][head of the group]
    const int Q = job.query_count;
    states.resize(static_cast<size_t>(Q) * G);
    for (int q = 0; q < Q; ++q)
      for (int g = 0; g < G; ++g) init_state<Isa, kVecs>(a, job.token + q, job.head + g, states[q * G + g]);
    const int32_t common = job.key_begin + (job.n_keys - job.key_begin) / kKeyTile * kKeyTile;
    run_tiles<Isa, kVecs, kT>(a, job.seq, kvh, job.key_begin, job.key_begin, common, states.data(), Q * G);
    for (int q = 0; q < Q; ++q) {
      run_tiles<Isa, kVecs, kT>(a, job.seq, kvh, job.key_begin, common, job.n_keys + q, &states[q * G], G);
      for (int g = 0; g < G; ++g) finish_state<Isa, kVecs>(a, states[q * G + g]);
    }
    return;
  }
  if (job.cascade_count == 0) {
    HeadState<Isa> states[kMaxGroup];
    for (int g = 0; g < G; ++g) init_state<Isa, kVecs>(a, job.token, job.head + g, states[g]);
    run_tiles<Isa, kVecs, kT>(a, job.seq, kvh, job.key_begin, job.key_begin, job.n_keys, states, G);
    for (int g = 0; g < G; ++g) finish_state<Isa, kVecs>(a, states[g]);
    return;
  }
  // Cascade: states [member][head of the group].
  thread_local std::vector<HeadState<Isa>> states;
  states.resize(static_cast<size_t>(job.cascade_count) * G);
  for (int m = 0; m < job.cascade_count; ++m)
    for (int g = 0; g < G; ++g)
      init_state<Isa, kVecs>(a, members[job.cascade_begin + m].token, job.head + g, states[m * G + g]);
  // The shared tiles, located through the first member's table (the others hold the same blocks there).
  run_tiles<Isa, kVecs, kT>(a, members[job.cascade_begin].seq, kvh, 0, 0, job.shared_end, states.data(),
                            job.cascade_count * G);
  for (int m = 0; m < job.cascade_count; ++m) {
    const Job& mj = members[job.cascade_begin + m];
    run_tiles<Isa, kVecs, kT>(a, mj.seq, kvh, 0, job.shared_end, mj.n_keys, &states[m * G], G);
    for (int g = 0; g < G; ++g) finish_state<Isa, kVecs>(a, states[m * G + g]);
  }
}

// The output of one head of a split unit: its saved segment states folded in order, exactly as finish_state folds
// them in an unsplit run.
template <class Isa, int kVecs>
void fold_split(const PagedAttentionArgs& a, const SplitUnit& u, int g, const float* scratch, int64_t stride) {
  const int nv = kVecs > 0 ? kVecs : (a.head_dim + 15) / 16;
  Partial<Isa> merged, part;
  reset_partial<Isa>(merged, nv);  // overwritten by the first segment (u.segments >= 2); set for the compiler's sake
  bool has_merged = false;
  for (int32_t s = 0; s < u.segments; ++s) {
    const float* p = scratch + (u.first + static_cast<int64_t>(s) * u.head_count + g) * stride;
    for (int j = 0; j < nv; ++j) part.acc[j] = Isa::load(p + 16 * j, 16);
    part.max = p[16 * nv];
    part.sum = p[16 * nv + 1];
    fold_partial<Isa>(merged, has_merged, part, nv);
  }
  write_output<Isa, kVecs>(a, u.token, u.head + g, merged);
}

// Decode sequences (one query token, keys from 0) that share their first blocks (the same physical block ids, as
// prefix-cache hits, forks and anchors do) form cascades: their shared whole key tiles are read once per step. Each
// cascade lists its members in `members` ({seq, token, n_keys}); returns [first member, count, shared keys] per
// cascade. Only prefixes of at least two whole tiles are worth it.
struct Cascade {
  int32_t first, count, shared_end;
};
inline void find_cascades(const PagedAttentionArgs& a, std::vector<Job>& members, std::vector<Cascade>& cascades,
                          std::vector<uint8_t>& in_cascade) {
  members.clear();
  cascades.clear();
  in_cascade.assign(a.num_seqs, 0);
  thread_local std::vector<int32_t> decode;
  decode.clear();
  for (int32_t s = 0; s < a.num_seqs; ++s)
    if (a.cu_seqlens_q[s + 1] - a.cu_seqlens_q[s] == 1 && (!a.kv_begin || a.kv_begin[s] == 0) &&
        a.seq_lens_kv[s] >= 2 * kKeyTile)
      decode.push_back(s);
  const int32_t* bt = a.block_table;
  // Candidates share the blocks holding keys 0 and 2 * kKeyTile - 1 (the least a cascade is worth).
  const int32_t second = (2 * kKeyTile - 1) / a.block_size;
  auto key = [&](int32_t s) {
    const int64_t r = static_cast<int64_t>(s) * a.max_blocks;
    return std::make_pair(bt[r], bt[r + second]);
  };
  std::sort(decode.begin(), decode.end(), [&](int32_t x, int32_t y) { return std::make_pair(key(x), x) < std::make_pair(key(y), y); });
  for (size_t i = 0; i < decode.size();) {
    size_t j = i + 1;
    const int32_t s0 = decode[i];
    while (j < decode.size() && key(decode[j]) == key(s0)) ++j;
    if (j - i >= 2) {
      // Keys shared by every member: whole blocks with equal ids, at most each member's keys before its query.
      int32_t shared = a.seq_lens_kv[s0] - 1;
      for (size_t m = i + 1; m < j; ++m) {
        const int32_t s = decode[m];
        int32_t blocks = 0;
        const int32_t limit = std::min(a.seq_lens_kv[s], a.seq_lens_kv[s0]) / a.block_size;
        while (blocks < limit && bt[static_cast<int64_t>(s) * a.max_blocks + blocks] == bt[static_cast<int64_t>(s0) * a.max_blocks + blocks]) ++blocks;
        shared = std::min({shared, blocks * a.block_size, a.seq_lens_kv[s] - 1});
      }
      shared = shared / kKeyTile * kKeyTile;
      if (shared >= 2 * kKeyTile) {
        Cascade c{static_cast<int32_t>(members.size()), static_cast<int32_t>(j - i), shared};
        for (size_t m = i; m < j; ++m) {
          const int32_t s = decode[m];
          members.push_back({s, a.cu_seqlens_q[s], a.seq_lens_kv[s], 0, 0});
          in_cascade[s] = 1;
        }
        cascades.push_back(c);
      }
    }
    i = j;
  }
}

// Whether split-KV decode may split a long query's segments into jobs of their own (kAuto: with two threads or more).
inline bool split_kv_allowed(const PagedAttentionArgs& a, int num_threads) {
  return a.split_kv == SplitKv::kAlways || (a.split_kv == SplitKv::kAuto && num_threads >= 2);
}

// A decode query's heads when heads share KV heads but there are too few queries to give each thread two jobs of a
// KV head's heads (single-stream decode): each thread a contiguous share of the heads, one job per KV head the share
// touches (SmolLM2's 9/3 heads on 2 threads: heads 0-2 and 3 on one, 4-5 and 6-8 on the other), so that a KV head's
// heads step its tiles together (tile_steps) while the threads stay within a head of each other. Against nine
// single-head jobs dealt round-robin, alternating steps in one process (`pagoda_attention_decode_batch 1 65 9 3 30`,
// Zen 5, AVX-512): 72.6 -> 61.4 and 63.2 -> 53.0 us a step; whole decode, in-process median ratios 0.975-1.027
// over seven runs (median 1.011; docs/PERFORMANCE.md).
inline void thread_share_jobs(const PagedAttentionArgs& a, int num_threads, int32_t s, int32_t key_begin,
                              std::vector<Job>& jobs) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  for (int t = 0; t < num_threads; ++t) {
    const int32_t lo = static_cast<int32_t>(int64_t{t} * a.n_heads / num_threads);
    const int32_t hi = static_cast<int32_t>(int64_t{t + 1} * a.n_heads / num_threads);
    for (int32_t h = lo; h < hi;) {
      const int32_t end = std::min(hi, std::min(h / group * group + group, h + kMaxGroup));
      Job j{s, a.cu_seqlens_q[s], a.seq_lens_kv[s], h, key_begin, end - h};
      j.thread = t;
      jobs.push_back(j);
      h = end;
    }
  }
}

// The fused kernel's jobs: a token's query heads that share a KV head together (at most kMaxGroup at a time), unless
// that leaves fewer than two jobs per thread (a short decode batch), when a decode query of at most a segment of
// keys gives each thread a contiguous share of its heads (thread_share_jobs) and every other head is a job of its
// own; a prefill chunk's queries kQueryGroup consecutive tokens at a time; decode sequences sharing a prefix form one
// job per cascade and head group; and in a batch of at least two decode queries a thread, each query's heads, all of
// them, one job.
inline void collect_group_jobs(const PagedAttentionArgs& a, int num_threads, std::vector<Job>& jobs,
                               std::vector<Job>& members) {
  const int32_t group = a.n_heads / a.n_kv_heads;
  const int32_t chunk = std::min<int32_t>(group, kMaxGroup);
  int64_t tokens = 0, segments = 0;  // query jobs per head group, and the same counting a decode's segments
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const int32_t q_len = a.cu_seqlens_q[s + 1] - a.cu_seqlens_q[s];
    const int32_t query_jobs = (q_len + kQueryGroup - 1) / kQueryGroup;
    tokens += query_jobs;
    if (q_len == 1) segments += (a.seq_lens_kv[s] - (a.kv_begin ? a.kv_begin[s] : 0) + kKeySegment - 1) / kKeySegment;
    else segments += query_jobs;
  }
  // Heads of a KV head run together when that still leaves two jobs per thread, counting a long decode's segments
  // (split-KV spreads them over the threads) when splitting is allowed.
  const int64_t units = (a.split_kv == SplitKv::kNever ? tokens : segments) * a.n_heads / std::max(chunk, 1);
  const bool grouped = chunk > 1 && units >= 2 * num_threads;
  const int32_t step = grouped ? chunk : 1;
  thread_local std::vector<Cascade> cascades;
  thread_local std::vector<uint8_t> in_cascade;
  find_cascades(a, members, cascades, in_cascade);
  jobs.clear();
  for (const Cascade& c : cascades)
    for (int32_t h = 0; h < a.n_heads; h += chunk) {
      Job j{members[c.first].seq, members[c.first].token, members[c.first].n_keys, h, 0,
            std::min(chunk, group - h % group)};
      j.cascade_begin = c.first;
      j.cascade_count = c.count;
      j.shared_end = c.shared_end;
      jobs.push_back(j);
    }
  // Decode queries read a whole sequence's slots, every KV head, as one job when there are enough of them to keep
  // every thread busy (two jobs a thread): the K/V then stream in address order (run_tiles). So does, in a batch of
  // decode queries only, one long enough that split-KV gives every thread two of its segments (split_long_jobs
  // then splits the job, a segment of every KV head a job): SmolLM2's attention alone, one sequence, from memory,
  // Zen 5, against a job per KV head and segment: 4,032 keys -5-12%, 1,024 keys -10%; at 600 keys (3 segments) even,
  // below that slower, hence the threshold (docs/PERFORMANCE.md).
  int64_t decode_queries = 0;
  bool decode_only = true;
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    const bool decode = a.cu_seqlens_q[s + 1] - a.cu_seqlens_q[s] == 1;
    decode_queries += !in_cascade[s] && decode;
    decode_only = decode_only && decode;
  }
  const bool whole_slots = a.n_kv_heads > 1 && decode_queries >= 2 * num_threads;
  for (int32_t s = 0; s < a.num_seqs; ++s) {
    if (in_cascade[s]) continue;
    const int32_t q_begin = a.cu_seqlens_q[s], q_len = a.cu_seqlens_q[s + 1] - q_begin;
    const int32_t key_begin = a.kv_begin ? a.kv_begin[s] : 0;
    const bool long_alone = decode_only && split_kv_allowed(a, num_threads) && a.n_kv_heads > 1 &&
                            (a.seq_lens_kv[s] - key_begin + kKeySegment - 1) / kKeySegment >= 2 * num_threads;
    if ((whole_slots || long_alone) && q_len == 1) {
      Job j{s, q_begin, a.seq_lens_kv[s], 0, key_begin, group};
      j.kv_head_count = a.n_kv_heads;
      jobs.push_back(j);
      continue;
    }
    if (!grouped && group > 1 && q_len == 1 && a.seq_lens_kv[s] - key_begin <= kKeySegment) {
      thread_share_jobs(a, num_threads, s, key_begin, jobs);
      continue;
    }
    for (int32_t i = 0; i < q_len; i += kQueryGroup)
      for (int32_t h = 0; h < a.n_heads; h += step) {
        Job j{s, q_begin + i, a.seq_lens_kv[s] - q_len + i + 1, h, key_begin, std::min(step, group - h % group)};
        j.query_count = std::min(kQueryGroup, q_len - i);
        jobs.push_back(j);
      }
  }
}

// Split-KV decode: a job of at least two segments whose keys are more than half a thread's fair share of the
// step's work (a long sequence among few jobs) becomes one job per segment, so one long sequence uses every thread;
// the units to fold afterwards go to `units`, and the scratch states they need to *scratch_states. Which jobs split
// depends on the thread count, but the results never do (the split runs the same operations).
inline void split_long_jobs(const PagedAttentionArgs& a, int num_threads, std::vector<Job>& jobs,
                            std::vector<SplitUnit>& units, int64_t* scratch_states) {
  units.clear();
  *scratch_states = 0;
  if (!split_kv_allowed(a, num_threads)) return;
  int64_t work = 0;
  for (const Job& j : jobs)
    work += static_cast<int64_t>(j.n_keys - j.key_begin) * j.head_count * j.kv_head_count * j.query_count;
  const int64_t share = work / (2 * num_threads);
  auto splits = [&](const Job& j) {  // single queries only (a prefill job of several runs whole)
    const int64_t w = static_cast<int64_t>(j.n_keys - j.key_begin) * j.head_count * j.kv_head_count;
    return j.cascade_count == 0 && j.query_count == 1 && segments_of(j) >= 2 &&
           (a.split_kv == SplitKv::kAlways || w > share);
  };
  if (std::none_of(jobs.begin(), jobs.end(), splits)) return;
  thread_local std::vector<Job> split;
  split.clear();
  for (const Job& j : jobs) {
    if (!splits(j)) {
      split.push_back(j);
      continue;
    }
    const int32_t segs = segments_of(j);
    const int32_t heads = j.head_count * j.kv_head_count;  // consecutive from j.head
    units.push_back({j.token, j.head, heads, segs, *scratch_states});
    for (int32_t s = 0; s < segs; ++s) {
      Job part = j;
      part.segment = s;
      part.scratch = *scratch_states + static_cast<int64_t>(s) * heads;
      split.push_back(part);
    }
    *scratch_states += static_cast<int64_t>(segs) * heads;
  }
  jobs.swap(split);
}

// Calls fn(job) for every (token, head) job of the batch, dealt round-robin to the pool's threads: causal rows
// differ in length, so contiguous ranges would load the threads unevenly.
template <typename Fn>
void for_each_job(const PagedAttentionArgs& a, ThreadPool& pool, Fn&& fn) {
  thread_local std::vector<Job> jobs;
  collect_jobs(a, jobs);
  const int nt = pool.num_threads();
  const std::vector<Job>& all = jobs;
  pool.run([&](int tid) {
    for (size_t j = tid; j < all.size(); j += nt) fn(all[j]);
  });
}

// One thread's part of the fused kernel, inside a pool.run region whose every thread calls it with the same
// arguments: each thread plans the same jobs, runs every num_threads()-th of them, and (split-KV) folds its share of
// the split heads after a barrier. `scratch` is one buffer for the whole region (split-KV's saved states).
template <class Isa, KvDtype kT>
void paged_attention_region_typed(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch) {
  auto run_share = [&](auto job_fn, auto fold_fn) {
    thread_local std::vector<Job> jobs, members;
    thread_local std::vector<SplitUnit> units;
    const int nt = pool.num_threads();
    collect_group_jobs(a, nt, jobs, members);
    int64_t states = 0;
    split_long_jobs(a, nt, jobs, units, &states);
    const int64_t stride = 16 * ((a.head_dim + 15) / 16) + 2;  // [saved state][16 * vectors + 2]
    if (!units.empty()) {  // (every thread takes this branch or none)
      if (tid == 0 && static_cast<int64_t>(scratch.size()) < states * stride) scratch.resize(states * stride);
      pool.barrier(tid);
    }
    float* saved = scratch.data();
    size_t dealt = 0;  // jobs without a thread of their own go round-robin
    for (const Job& job : jobs)
      if (job.thread >= 0 ? job.thread == tid : dealt++ % nt == static_cast<size_t>(tid))
        job_fn(a, job, members, saved, stride);
    if (units.empty()) return;
    pool.barrier(tid);
    int64_t i = 0;
    for (const SplitUnit& u : units)
      for (int g = 0; g < u.head_count; ++g, ++i)
        if (i % nt == tid) fold_fn(a, u, g, saved, stride);
  };
  switch (a.head_dim) {
    case 64: return run_share(run_job<Isa, 4, kT>, fold_split<Isa, 4>);
    case 128: return run_share(run_job<Isa, 8, kT>, fold_split<Isa, 8>);
    default: return run_share(run_job<Isa, 0, kT>, fold_split<Isa, 0>);
  }
}

template <class Isa>
void paged_attention_region_with(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch) {
  switch (a.kv_dtype) {
    case KvDtype::kF32: return paged_attention_region_typed<Isa, KvDtype::kF32>(a, pool, tid, scratch);
    case KvDtype::kF16: return paged_attention_region_typed<Isa, KvDtype::kF16>(a, pool, tid, scratch);
    case KvDtype::kBF16: return paged_attention_region_typed<Isa, KvDtype::kBF16>(a, pool, tid, scratch);
    case KvDtype::kQ8_0: return paged_attention_region_typed<Isa, KvDtype::kQ8_0>(a, pool, tid, scratch);
  }
}

}  // namespace pagoda::attention_impl
