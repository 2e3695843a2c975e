// Attention over a paged KV cache, for a batch of sequences in one call.
//
// Metadata (the contract of docs/seeds/paged-attention-kernel-lesson.md):
//   cu_seqlens_q [num_seqs + 1]  prefix sums of the query lengths (starts at 0)
//   seq_lens_kv  [num_seqs]      tokens of K/V per sequence, this step's included
//   block_table  [num_seqs, max_blocks] int32, right-padded
// Query token q of sequence s attends to keys kv_begin[s] .. seq_lens_kv[s] - q_len[s] + q of sequence s only
// (kv_begin: nullptr means 0 for every sequence; it is the seam of per-anchor layer masks, where a layer that does
// not see a sequence's anchor starts its keys after the anchor; 0 <= kv_begin[s] <= seq_lens_kv[s] - q_len[s], so
// every query sees at least its own key).
//
// K/V may be stored as f32, f16, bf16 or Q8_0 (kv/kv_dtype.h). Each kernel converts the stored values to their exact
// f32 values as it reads them, so for every type a result is bitwise the result over an f32 cache holding those
// values.
//
// Two implementations: a reference (gathers each sequence's K/V into a contiguous buffer, plain softmax) and the
// fused kernel (reads K/V in place through the block table, online softmax). The fused kernel's arithmetic is
// independent of the block size and of whatever else is in the batch: keys are visited in logical order, in
// tiles of kKeyTile logical positions (not physical blocks) counted from kv_begin, grouped into segments of
// kKeySegment positions whose softmax states are folded left to right (the one reduction order, followed by every
// grouping of the work: grouped-query jobs, cascades over shared prefix blocks, split-KV decode), so its results
// are bitwise reproducible across block sizes, batch compositions, thread counts and splits, and a query with
// kv_begin = b gives the bits of the same query over a sequence holding only keys b.. .
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_dtype.h"
#include "util/thread_pool.h"

namespace pagoda {

// Split-KV decode (the segments of a long sequence's keys run as jobs of their own, then fold): chosen by the
// kernel when a job would hold more than half a thread's share of the step (kAuto), or forced either way. The
// results are the same bits in every case; only the work's spread over threads differs.
enum class SplitKv { kAuto, kNever, kAlways };

struct PagedAttentionArgs {
  const float* q = nullptr;               // [num_tokens, n_heads, head_dim]
  const void* k_cache = nullptr;          // [num_blocks, block_size, n_kv_heads, head_dim] of kv_dtype
  const void* v_cache = nullptr;          // [num_blocks, block_size, n_kv_heads, head_dim] of kv_dtype
  const int32_t* cu_seqlens_q = nullptr;  // [num_seqs + 1]
  const int32_t* seq_lens_kv = nullptr;   // [num_seqs]
  const int32_t* block_table = nullptr;   // [num_seqs, max_blocks]
  const int32_t* kv_begin = nullptr;      // [num_seqs] first logical key attended to; nullptr: 0
  float* out = nullptr;                   // [num_tokens, n_heads, head_dim]
  int32_t num_seqs = 0;
  int32_t max_blocks = 0;  // row stride of block_table
  int32_t block_size = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;  // n_heads % n_kv_heads == 0
  int32_t head_dim = 0;
  float scale = 1.0f;
  KvDtype kv_dtype = KvDtype::kF32;  // every stored value converts to f32 exactly: the kernels' arithmetic is the
                                     // same for every type (q8_0 needs head_dim % 32 == 0)
  SplitKv split_kv = SplitKv::kAuto;
};

// Logical key positions per online-softmax tile of the fused kernel.
constexpr int32_t kKeyTile = 32;
// Logical key positions per segment: the unit whose softmax states are folded, and of split-KV decode's jobs.
constexpr int32_t kKeySegment = 256;

void paged_attention_reference(const PagedAttentionArgs& a, ThreadPool& pool);
// The fused kernel in the process's kernel set (cpu_features.h: PAGODA_ISA, or the widest this CPU runs: AVX-512,
// AVX2 + FMA, or portable C++). All builds give bitwise identical results (same operations, explicit FMAs, no
// contraction). head_dim <= 256.
void paged_attention(const PagedAttentionArgs& a, ThreadPool& pool);
// One build explicitly ("avx512", "avx2", "portable"); false (nothing run) when this CPU lacks it.
bool paged_attention_isa(const PagedAttentionArgs& a, ThreadPool& pool, const char* isa);
// One thread's part of paged_attention (the same bits), for the forward pass that runs a whole step in one pool.run
// region (model/transformer_team.h): every thread of the region calls it with the same arguments and `scratch`, one
// buffer for all of them (split-KV's saved states); read `out` only after a barrier.
void paged_attention_in_region(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch);
// The builds' parts (paged_attention and paged_attention_isa run them on the pool).
void paged_attention_region_avx512(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch);
void paged_attention_region_avx2(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch);
void paged_attention_region_portable(const PagedAttentionArgs& a, ThreadPool& pool, int tid,
                                     std::vector<float>& scratch);

constexpr int32_t kMaxPagedHeadDim = 256;

}  // namespace pagoda
