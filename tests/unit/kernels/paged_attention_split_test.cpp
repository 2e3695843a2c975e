// The attention reduction order (segments of kKeySegment keys folded left to right) and split-KV decode: however the
// work is spread (one thread per job, a long sequence's segments as jobs of their own, any thread count), every
// ISA build gives the same bits, and those bits are the attention (within the reference's tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/paged_attention.h"
#include "kernels/isa_skip.h"
#include "paged_batch.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

// Long decodes (one segment and a bit, several segments, exact multiples), a long prefill chunk and short ones.
const std::vector<SeqSpec> kLongSpecs = {{1000, 1}, {257, 1}, {2 * kKeySegment, 1}, {700, 5}, {40, 1}, {3, 3}};

// Empty when this CPU lacks the build (reported as skipped).
std::vector<float> run(const PagedBatch& b, ThreadPool& pool, const char* isa, SplitKv split) {
  if (!isa_runs_or_skip(isa)) return {};
  std::vector<float> out(b.out_size(), -1.0f);
  PagedAttentionArgs a = b.args(out.data());
  a.split_kv = split;
  EXPECT_TRUE(paged_attention_isa(a, pool, isa)) << isa;
  return out;
}

// The portable build's bits on one thread with no split, checked against the reference (within its tolerance);
// empty on a failed check.
std::vector<float> one_thread_bits(const PagedBatch& b) {
  ThreadPool one(1);
  std::vector<float> want = run(b, one, "portable", SplitKv::kNever), ref(b.out_size());
  paged_attention_reference(b.args(ref.data()), one);
  for (size_t i = 0; i < ref.size() && !want.empty(); ++i)
    if (std::fabs(want[i] - ref[i]) > 2e-5f) {
      ADD_FAILURE() << "output " << i << ": " << want[i] << " against the reference's " << ref[i];
      return {};
    }
  return want;
}

TEST(PagedAttentionSplit, EverySplitThreadCountAndIsaGivesTheSameBits) {
  for (int32_t group : {1, 4}) {
    for (int32_t hd : {64, 72}) {
      const int32_t n_kv = 2, n_heads = n_kv * group;
      const PagedBatch b = make_batch(kLongSpecs, 16, n_heads, n_kv, hd, 300 + hd + group);
      const std::vector<float> want = one_thread_bits(b);
      ASSERT_FALSE(want.empty());
      int compared = 0;
      for (int threads : {1, 2, 3, 5}) {
        ThreadPool pool(threads);
        for (const char* isa : {"portable", "avx2", "avx512"})
          for (SplitKv split : {SplitKv::kNever, SplitKv::kAuto, SplitKv::kAlways}) {
            const std::vector<float> got = run(b, pool, isa, split);
            if (got.empty()) continue;
            ++compared;
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4))
                << isa << " threads " << threads << " split " << static_cast<int>(split) << " group " << group
                << " head_dim " << hd;
          }
      }
      EXPECT_GE(compared, 24);
    }
  }
}

// Decode-only batches whose long sequences split into at least two segments a thread run those as whole-slot jobs
// (every KV head of a segment in one job): the same bits as one thread with no split, for grouped and ungrouped heads.
TEST(PagedAttentionSplit, LongDecodesAloneReadWholeSlotsWithTheSameBits) {
  for (int32_t group : {1, 3}) {
    for (const std::vector<SeqSpec>& specs : {std::vector<SeqSpec>{{1300, 1}}, std::vector<SeqSpec>{{1300, 1}, {600, 1}}}) {
      const int32_t n_kv = 3, n_heads = n_kv * group, hd = 64;
      const PagedBatch b = make_batch(specs, 16, n_heads, n_kv, hd, 77 + group + static_cast<int>(specs.size()));
      const std::vector<float> want = one_thread_bits(b);
      ASSERT_FALSE(want.empty());
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (const char* isa : {"portable", "avx2", "avx512"})
          for (SplitKv split : {SplitKv::kNever, SplitKv::kAuto, SplitKv::kAlways}) {
            const std::vector<float> got = run(b, pool, isa, split);
            if (got.empty()) continue;
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4))
                << isa << " threads " << threads << " split " << static_cast<int>(split) << " group " << group
                << " sequences " << specs.size();
          }
      }
    }
  }
}

// A single long decode among few jobs is split on its own (kAuto) and still gives the bits of the sequence run by one
// thread; with kv_begin inside the keys, segments count from kv_begin: the bits of a sequence holding only keys b...
TEST(PagedAttentionSplit, SegmentsCountFromKvBegin) {
  const int32_t hd = 64, n_kv = 1, n_heads = 2, begin = 37;
  PagedBatch masked = make_batch({{900, 1}}, 16, n_heads, n_kv, hd, 5);
  masked.kv_begin = {begin};
  PagedBatch shifted = masked;
  shifted.kv_begin.clear();
  shifted.k_logical[0].erase(shifted.k_logical[0].begin(), shifted.k_logical[0].begin() + begin * n_kv * hd);
  shifted.v_logical[0].erase(shifted.v_logical[0].begin(), shifted.v_logical[0].begin() + begin * n_kv * hd);
  pack_batch(shifted, {{900 - begin, 1}}, 8);
  ThreadPool one(1), four(4);
  const std::vector<float> want = run(shifted, one, "portable", SplitKv::kNever);
  for (const char* isa : {"portable", "avx2", "avx512"})
    for (SplitKv split : {SplitKv::kNever, SplitKv::kAuto, SplitKv::kAlways}) {
      const std::vector<float> got = run(masked, four, isa, split);
      if (got.empty()) continue;
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4)) << isa << " " << static_cast<int>(split);
    }
}

// A cascade whose shared prefix crosses segment boundaries (shared 320 keys, members up to 900): each member gets
// the bits it gets alone, split or not.
TEST(PagedAttentionSplit, CascadeAcrossSegmentsGivesEachSequenceItsOwnBits) {
  const int32_t n_kv = 2, n_heads = 4, hd = 64, bs = 16, shared = 320;
  const std::vector<SeqSpec> specs = {{900, 1}, {600, 1}, {330, 1}};
  PagedBatch b = make_batch(specs, bs, n_heads, n_kv, hd, 61);
  const int32_t row = n_kv * hd;
  for (int s : {1, 2}) {
    std::copy(b.k_logical[0].begin(), b.k_logical[0].begin() + shared * row, b.k_logical[s].begin());
    std::copy(b.v_logical[0].begin(), b.v_logical[0].begin() + shared * row, b.v_logical[s].begin());
  }
  pack_batch(b, specs, 9);
  for (int s : {1, 2})
    for (int blk = 0; blk < shared / bs; ++blk) b.block_table[s * b.max_blocks + blk] = b.block_table[blk];
  ThreadPool pool(2);
  for (const char* isa : {"portable", "avx2", "avx512"}) {
    const std::vector<float> out = run(b, pool, isa, SplitKv::kAuto);
    if (out.empty()) continue;
    for (size_t s = 0; s < specs.size(); ++s) {
      PagedBatch one{bs, n_heads, n_kv, hd, {b.k_logical[s]}, {b.v_logical[s]}, {}, {}, {}, {0}, {}, {}, 0, {}};
      one.q.assign(b.q.begin() + s * n_heads * hd, b.q.begin() + (s + 1) * n_heads * hd);
      pack_batch(one, {specs[s]}, 3);
      for (SplitKv split : {SplitKv::kNever, SplitKv::kAlways}) {
        const std::vector<float> alone = run(one, pool, isa, split);
        EXPECT_EQ(0, std::memcmp(alone.data(), out.data() + s * n_heads * hd, alone.size() * 4))
            << isa << " sequence " << s << " split " << static_cast<int>(split);
      }
    }
  }
}

// Every K/V dtype follows the same order (a q8_0 cache split or not).
TEST(PagedAttentionSplit, StoredTypesSplitToTheSameBits) {
  const PagedBatch b = make_batch({{800, 1}, {100, 1}}, 16, 4, 2, 64, 71);
  // The same pool stored as f16 (unused slots as 0).
  std::vector<uint16_t> k16(b.k_pool.size()), v16(b.v_pool.size());
  for (size_t i = 0; i < k16.size(); ++i) {
    const float k = std::isnan(b.k_pool[i]) ? 0.0f : b.k_pool[i], v = std::isnan(b.v_pool[i]) ? 0.0f : b.v_pool[i];
    k16[i] = f32_to_f16(k);
    v16[i] = f32_to_f16(v);
  }
  ThreadPool pool(3);
  std::vector<float> want, got(b.out_size());
  for (SplitKv split : {SplitKv::kNever, SplitKv::kAlways, SplitKv::kAuto}) {
    PagedAttentionArgs a = b.args(got.data());
    a.k_cache = k16.data();
    a.v_cache = v16.data();
    a.kv_dtype = KvDtype::kF16;
    a.split_kv = split;
    paged_attention(a, pool);
    if (want.empty()) want = got;
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4)) << static_cast<int>(split);
  }
}

}  // namespace
}  // namespace pagoda
