#include "kernels/cpu/paged_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cpu/attention_ref.h"
#include "util/rng.h"

namespace pagoda {
namespace {

struct SeqSpec {
  int32_t kv_len;
  int32_t q_len;  // 1 = decode; > 1 = a prefill chunk ending at kv_len
};

// Logical K/V of each sequence, stored into a paged pool with shuffled physical blocks.
struct PagedBatch {
  int32_t block_size, n_heads, n_kv_heads, head_dim;
  std::vector<std::vector<float>> k_logical, v_logical;  // per seq: [kv_len, n_kv_heads, head_dim]
  std::vector<float> q;                                  // [num_tokens, n_heads, head_dim]
  std::vector<float> k_pool, v_pool;
  std::vector<int32_t> cu_seqlens_q, seq_lens_kv, block_table;
  int32_t max_blocks = 0;

  PagedAttentionArgs args(float* out) const {
    PagedAttentionArgs a;
    a.q = q.data();
    a.k_cache = k_pool.data();
    a.v_cache = v_pool.data();
    a.cu_seqlens_q = cu_seqlens_q.data();
    a.seq_lens_kv = seq_lens_kv.data();
    a.block_table = block_table.data();
    a.out = out;
    a.num_seqs = static_cast<int32_t>(seq_lens_kv.size());
    a.max_blocks = max_blocks;
    a.block_size = block_size;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    return a;
  }
  size_t out_size() const { return q.size(); }
};

// Builds K/V/Q from `seed` (so the same seed gives the same logical contents whatever the block size).
PagedBatch make_batch(const std::vector<SeqSpec>& specs, int32_t block_size, int32_t n_heads, int32_t n_kv_heads,
                      int32_t head_dim, uint64_t seed) {
  PagedBatch b{block_size, n_heads, n_kv_heads, head_dim, {}, {}, {}, {}, {}, {0}, {}, {}, 0};
  Rng rng(seed);
  auto rnd = [&] { return static_cast<float>(rng.next_double() * 2 - 1); };
  const int32_t row = n_kv_heads * head_dim;
  int32_t total_blocks = 0;
  for (const auto& s : specs) {
    b.k_logical.emplace_back(static_cast<size_t>(s.kv_len) * row);
    b.v_logical.emplace_back(static_cast<size_t>(s.kv_len) * row);
    for (auto& x : b.k_logical.back()) x = rnd();
    for (auto& x : b.v_logical.back()) x = rnd();
    for (int32_t i = 0; i < s.q_len * n_heads * head_dim; ++i) b.q.push_back(rnd());
    b.cu_seqlens_q.push_back(b.cu_seqlens_q.back() + s.q_len);
    b.seq_lens_kv.push_back(s.kv_len);
    const int32_t nb = (s.kv_len + block_size - 1) / block_size;
    b.max_blocks = std::max(b.max_blocks, nb);
    total_blocks += nb;
  }
  // Physical blocks in a shuffled order, plus one spare, so tables are neither contiguous nor sorted.
  std::vector<int32_t> physical(total_blocks + 1);
  std::iota(physical.begin(), physical.end(), 0);
  Rng shuffle(seed ^ 0x5eed);
  for (size_t i = physical.size() - 1; i > 0; --i) std::swap(physical[i], physical[shuffle.next_u64() % (i + 1)]);
  b.k_pool.assign(physical.size() * block_size * row, NAN);  // unused slots are NaN: reading one poisons the output
  b.v_pool.assign(b.k_pool.size(), NAN);
  b.block_table.assign(specs.size() * b.max_blocks, -1);
  size_t next = 0;
  for (size_t s = 0; s < specs.size(); ++s) {
    for (int32_t p = 0; p < specs[s].kv_len; ++p) {
      if (p % block_size == 0) b.block_table[s * b.max_blocks + p / block_size] = physical[next++];
      const int64_t slot =
          static_cast<int64_t>(b.block_table[s * b.max_blocks + p / block_size]) * block_size + p % block_size;
      std::memcpy(&b.k_pool[slot * row], &b.k_logical[s][static_cast<size_t>(p) * row], row * 4);
      std::memcpy(&b.v_pool[slot * row], &b.v_logical[s][static_cast<size_t>(p) * row], row * 4);
    }
  }
  return b;
}

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
      std::vector<float> out(b.out_size(), -1.0f);
      if (!paged_attention_isa(b.args(out.data()), pool, isa)) continue;  // this CPU lacks it
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

}  // namespace
}  // namespace pagoda
