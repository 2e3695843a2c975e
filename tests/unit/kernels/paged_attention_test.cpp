#include "kernels/cpu/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cpu/attention_ref.h"
#include "kernels/isa_skip.h"
#include "paged_batch.h"
#include "util/rng.h"

namespace pagoda {
namespace {

// Mixed decode and prefill chunks with lengths that start, cross and end on block boundaries.
std::vector<SeqSpec> mixed_specs(int32_t bs) {
  return {{1, 1}, {bs, 1}, {bs + 1, 1}, {2 * bs, 2 * bs}, {2 * bs + 3, 5}, {3 * bs - 1, 1}, {37, 37}, {40, 3}};
}

class PagedAttentionShapes : public ::testing::TestWithParam<std::tuple<int32_t, int32_t, int32_t>> {};

TEST_P(PagedAttentionShapes, FusedMatchesReference) {
  const auto [gqa, head_dim, block_size] = GetParam();
  const int32_t n_kv = 2, n_heads = n_kv * gqa;
  const PagedBatch b = make_batch(mixed_specs(block_size), block_size, n_heads, n_kv, head_dim, 17);
  std::vector<float> fused(b.out_size()), ref(b.out_size());
  ThreadPool pool(2);
  paged_attention(b.args(fused.data()), pool);
  paged_attention_reference(b.args(ref.data()), pool);
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_TRUE(std::isfinite(fused[i])) << "fused read an unwritten slot at output " << i;
    ASSERT_NEAR(fused[i], ref[i], 2e-5f) << "output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(GqaHeadDimBlockSize, PagedAttentionShapes,
                         ::testing::Combine(::testing::Values(1, 2, 4, 8), ::testing::Values(64, 128),
                                            ::testing::Values(1, 16, 32)));

TEST(PagedAttention, ReferenceMatchesTheContiguousSingleSequenceKernel) {
  const PagedBatch b = make_batch({{29, 29}}, 16, 4, 2, 64, 3);
  std::vector<float> paged(b.out_size()), contiguous(b.out_size());
  ThreadPool pool(1);
  paged_attention_reference(b.args(paged.data()), pool);
  ContiguousAttentionArgs c{
      b.q.data(), b.k_logical[0].data(), b.v_logical[0].data(), contiguous.data(), 29, 0, 4, 2, 64, 1.0f / 8.0f};
  attention_contiguous(c, pool);
  for (size_t i = 0; i < paged.size(); ++i) ASSERT_NEAR(paged[i], contiguous[i], 2e-5f);
}

TEST(PagedAttention, EveryIsaBuildGivesTheSameBits) {
  // Head dims 8 (one ragged vector), 64, 72 (ragged tail), 128; lengths crossing key tiles of 32.
  for (int32_t hd : {8, 64, 72, 128}) {
    const PagedBatch b = make_batch({{45, 45}, {70, 1}, {33, 6}, {1, 1}}, 16, 4, 2, hd, 5 + hd);
    ThreadPool pool(2);
    std::vector<float> portable(b.out_size());
    ASSERT_TRUE(paged_attention_isa(b.args(portable.data()), pool, "portable"));
    int compared = 0;
    for (const char* isa : {"avx512", "avx2"}) {
      if (!isa_runs_or_skip(isa)) continue;
      std::vector<float> out(b.out_size(), -1.0f);
      ASSERT_TRUE(paged_attention_isa(b.args(out.data()), pool, isa)) << isa;
      ++compared;
      EXPECT_EQ(0, std::memcmp(portable.data(), out.data(), out.size() * 4)) << isa << " head_dim " << hd;
    }
    std::vector<float> ref(b.out_size());
    paged_attention_reference(b.args(ref.data()), pool);
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(portable[i], ref[i], 2e-5f) << "head_dim " << hd;
    RecordProperty("isa_builds_compared_hd" + std::to_string(hd), compared);
  }
}

TEST(PagedAttention, FusedIsBitwiseInvariantToBlockSizeBatchAndThreads) {
  const std::vector<SeqSpec> specs = {{45, 45}, {70, 1}, {33, 6}};
  ThreadPool one(1), three(3);
  std::vector<float> first;
  for (int32_t bs : {1, 16, 32}) {
    const PagedBatch b = make_batch(specs, bs, 8, 2, 64, 99);
    std::vector<float> out(b.out_size());
    paged_attention(b.args(out.data()), bs == 16 ? three : one);
    if (first.empty())
      first = out;
    else
      EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * 4)) << "block size " << bs;
  }
  // The middle sequence alone (a decode step) gives the same bits as inside the batch.
  const PagedBatch all = make_batch(specs, 16, 8, 2, 64, 99);
  PagedBatch alone = all;
  alone.cu_seqlens_q = {0, 1};
  alone.seq_lens_kv = {70};
  alone.block_table.assign(all.block_table.begin() + all.max_blocks, all.block_table.begin() + 2 * all.max_blocks);
  alone.q.assign(all.q.begin() + 45 * 8 * 64, all.q.begin() + 46 * 8 * 64);
  std::vector<float> single(alone.q.size());
  paged_attention(alone.args(single.data()), one);
  EXPECT_EQ(0, std::memcmp(single.data(), first.data() + 45 * 8 * 64, single.size() * 4));
}

// kv_begin (the per-anchor layer mask's seam): a query that starts at key b gives, in every ISA build and at any
// block size, the bits of the same query over a sequence that holds only the keys b.. (its tiles count from b).
TEST(PagedAttention, KvBeginEqualsASequenceWithoutThePrefixBitwise) {
  const std::vector<SeqSpec> specs = {{45, 45}, {70, 1}, {33, 6}, {90, 3}, {1, 1}};
  const std::vector<int32_t> begin = {0, 37, 27, 32, 0};  // a start inside a tile, on one, and none
  ThreadPool pool(2);
  for (int32_t hd : {64, 72}) {
    PagedBatch masked = make_batch(specs, 16, 4, 2, hd, 41 + hd);
    masked.kv_begin = begin;
    // The same queries over the keys from kv_begin on, stored at another block size.
    PagedBatch shifted = masked;
    shifted.block_size = 32;
    shifted.kv_begin.clear();
    std::vector<SeqSpec> shifted_specs;
    for (size_t s = 0; s < specs.size(); ++s) {
      const size_t row = static_cast<size_t>(2) * hd;
      shifted.k_logical[s].erase(shifted.k_logical[s].begin(), shifted.k_logical[s].begin() + begin[s] * row);
      shifted.v_logical[s].erase(shifted.v_logical[s].begin(), shifted.v_logical[s].begin() + begin[s] * row);
      shifted_specs.push_back({specs[s].kv_len - begin[s], specs[s].q_len});
    }
    pack_batch(shifted, shifted_specs, 7);
    std::vector<float> want(masked.out_size());
    ASSERT_TRUE(paged_attention_isa(shifted.args(want.data()), pool, "portable"));
    int compared = 0;
    for (const char* isa : {"portable", "avx512", "avx2"}) {
      if (!isa_runs_or_skip(isa)) continue;
      std::vector<float> got(masked.out_size(), -1.0f);
      ASSERT_TRUE(paged_attention_isa(masked.args(got.data()), pool, isa)) << isa;
      ++compared;
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4)) << isa << " head_dim " << hd;
    }
    EXPECT_GE(compared, 2) << "portable and at least one SIMD build";
    // The reference honours kv_begin too (not bitwise: it sums in double).
    std::vector<float> ref(masked.out_size()), ref_shifted(masked.out_size());
    paged_attention_reference(masked.args(ref.data()), pool);
    paged_attention_reference(shifted.args(ref_shifted.data()), pool);
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(ref[i], ref_shifted[i]) << "output " << i;
      ASSERT_NEAR(ref[i], want[i], 2e-5f) << "output " << i;
    }
  }
}

TEST(PagedAttention, KvBeginOfZeroIsTheDefaultBitwise) {
  PagedBatch b = make_batch(mixed_specs(16), 16, 4, 2, 64, 5);
  ThreadPool pool(2);
  std::vector<float> plain(b.out_size()), zeros(b.out_size());
  paged_attention(b.args(plain.data()), pool);
  b.kv_begin.assign(b.seq_lens_kv.size(), 0);
  paged_attention(b.args(zeros.data()), pool);
  EXPECT_EQ(0, std::memcmp(plain.data(), zeros.data(), plain.size() * 4));
}

TEST(PagedAttention, KvBeginChangesTheOutput) {
  PagedBatch b = make_batch({{40, 1}}, 16, 4, 2, 64, 8);
  ThreadPool pool(1);
  std::vector<float> plain(b.out_size()), masked(b.out_size());
  paged_attention(b.args(plain.data()), pool);
  b.kv_begin = {20};
  paged_attention(b.args(masked.data()), pool);
  EXPECT_NE(0, std::memcmp(plain.data(), masked.data(), plain.size() * 4));
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

// Grouped-query jobs (a token's query heads of one KV head run together, reading each key tile once) give each
// head the bits it gets as a job of its own: a decode token alone on 4 threads (too few jobs to group) against the
// same token inside a large batch (grouped), for groups of 2, 4, 8 and 16 (two jobs of 8), in every ISA build.
TEST(PagedAttention, GroupedQueryJobsGiveEachHeadItsOwnBits) {
  for (int32_t group : {2, 4, 8, 16}) {
    const int32_t n_kv = 2, n_heads = n_kv * group, hd = 64;
    const std::vector<SeqSpec> batch_specs = {{77, 1}, {40, 24}, {65, 9}};
    const PagedBatch batch = make_batch(batch_specs, 16, n_heads, n_kv, hd, 900 + group);
    // The first sequence alone: same logical K/V and query.
    PagedBatch alone{16, n_heads, n_kv, hd, {batch.k_logical[0]}, {batch.v_logical[0]}, {}, {}, {}, {0}, {}, {}, 0, {}};
    alone.q.assign(batch.q.begin(), batch.q.begin() + n_heads * hd);
    pack_batch(alone, {batch_specs[0]}, 5);
    ThreadPool four(4);
    for (const char* isa : {"portable", "avx2", "avx512"}) {
      if (!isa_runs_or_skip(isa)) continue;
      std::vector<float> in_batch(batch.out_size()), by_itself(alone.out_size());
      ASSERT_TRUE(paged_attention_isa(batch.args(in_batch.data()), four, isa));
      ASSERT_TRUE(paged_attention_isa(alone.args(by_itself.data()), four, isa));
      EXPECT_EQ(0, std::memcmp(in_batch.data(), by_itself.data(), by_itself.size() * 4)) << isa << " group " << group;
    }
  }
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

// Cascade decode: decode sequences whose first blocks are the same physical blocks (prefix-cache hits, forks) read
// those key tiles once for all of them, and each still gets the bits it gets alone. Three sequences share 4 blocks
// of 16 (64 keys: two whole tiles), a fourth shares only 1 block (too short to join), a fifth is unrelated, and a
// prefill chunk rides along; GQA groups of 1 and 4.
TEST(PagedAttention, CascadeOverSharedPrefixBlocksGivesEachSequenceItsOwnBits) {
  for (int32_t group : {1, 4}) {
    const int32_t n_kv = 2, n_heads = n_kv * group, hd = 64, bs = 16;
    const std::vector<SeqSpec> specs = {{100, 1}, {70, 1}, {129, 1}, {90, 1}, {50, 1}, {40, 7}};
    PagedBatch b = make_batch(specs, bs, n_heads, n_kv, hd, 77 + group);
    const int32_t row = n_kv * hd;
    // Sequences 1, 2 share sequence 0's first 64 keys; sequence 3 its first 16.
    for (int s : {1, 2, 3}) {
      const int32_t keys = s == 3 ? 16 : 64;
      std::copy(b.k_logical[0].begin(), b.k_logical[0].begin() + keys * row, b.k_logical[s].begin());
      std::copy(b.v_logical[0].begin(), b.v_logical[0].begin() + keys * row, b.v_logical[s].begin());
    }
    pack_batch(b, specs, 9);
    for (int s : {1, 2, 3})
      for (int blk = 0; blk < (s == 3 ? 1 : 4); ++blk) b.block_table[s * b.max_blocks + blk] = b.block_table[blk];
    ThreadPool pool(2);
    for (const char* isa : {"portable", "avx2", "avx512"}) {
      if (!isa_runs_or_skip(isa)) continue;
      std::vector<float> out(b.out_size());
      ASSERT_TRUE(paged_attention_isa(b.args(out.data()), pool, isa));
      for (size_t s = 0; s < specs.size(); ++s) {
        PagedBatch one{bs, n_heads, n_kv, hd, {b.k_logical[s]}, {b.v_logical[s]}, {}, {}, {}, {0}, {}, {}, 0, {}};
        const int32_t q0 = b.cu_seqlens_q[s], q1 = b.cu_seqlens_q[s + 1];
        one.q.assign(b.q.begin() + q0 * n_heads * hd, b.q.begin() + q1 * n_heads * hd);
        pack_batch(one, {specs[s]}, 3);
        std::vector<float> alone(one.out_size());
        ASSERT_TRUE(paged_attention_isa(one.args(alone.data()), pool, isa));
        EXPECT_EQ(0, std::memcmp(alone.data(), out.data() + q0 * n_heads * hd, alone.size() * 4))
            << isa << " group " << group << " sequence " << s;
      }
    }
  }
}

}  // namespace
}  // namespace pagoda
