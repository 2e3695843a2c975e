// The attention kernels over K/V stored as f16, bf16 and Q8_0: each reads the exact f32 value of every stored
// element, so its output is bitwise its output over an f32 cache holding those values, in every ISA build, and the
// probe and reference paths read the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/attention_probe.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/isa_skip.h"
#include "kv/kv_dtype.h"
#include "paged_batch.h"

namespace pagoda {
namespace {

// A batch's pools stored in type t (slots never written stay all-ones bytes: NaN in every type, the scale of a Q8_0
// block included, so reading one poisons the output), and the f32 pools of exactly the stored values.
struct TypedPools {
  std::vector<uint8_t> k, v;        // [slots, row] stored
  std::vector<float> k_f32, v_f32;  // [slots, row] the stored values as f32 (NaN where unused)
};

TypedPools store_pools(const PagedBatch& b, KvDtype t) {
  const int64_t row = b.n_kv_heads * b.head_dim, row_bytes = kv_bytes(t, row);
  const int64_t slots = static_cast<int64_t>(b.k_pool.size()) / row;
  TypedPools p;
  p.k.assign(slots * row_bytes, 0xFF);
  p.v.assign(p.k.size(), 0xFF);
  p.k_f32.assign(b.k_pool.size(), NAN);
  p.v_f32.assign(b.v_pool.size(), NAN);
  for (int64_t s = 0; s < slots; ++s) {
    if (std::isnan(b.k_pool[s * row])) continue;  // unused slot
    kv_store_row(t, &b.k_pool[s * row], row, &p.k[s * row_bytes]);
    kv_store_row(t, &b.v_pool[s * row], row, &p.v[s * row_bytes]);
    kv_load_row(t, &p.k[s * row_bytes], row, &p.k_f32[s * row]);
    kv_load_row(t, &p.v[s * row_bytes], row, &p.v_f32[s * row]);
  }
  return p;
}

PagedAttentionArgs typed_args(const PagedBatch& b, const TypedPools& p, KvDtype t, float* out) {
  PagedAttentionArgs a = b.args(out);
  a.k_cache = p.k.data();
  a.v_cache = p.v.data();
  a.kv_dtype = t;
  return a;
}

PagedAttentionArgs f32_args(const PagedBatch& b, const TypedPools& p, float* out) {
  PagedAttentionArgs a = b.args(out);
  a.k_cache = p.k_f32.data();
  a.v_cache = p.v_f32.data();
  return a;
}

class PagedAttentionKvDtype : public ::testing::TestWithParam<KvDtype> {};

TEST_P(PagedAttentionKvDtype, EveryBuildEqualsTheF32CacheOfTheStoredValuesBitwise) {
  const KvDtype t = GetParam();
  int compared = 0;
  // Heads per KV head 2 and 3: a prefill job's states (8 queries times the group) step a tile in groups of 4 and a
  // remainder (tile_steps), and head_dim 128 weighs its values 2 states a pass on AVX-512.
  for (int32_t hd : {8, 32, 64, 96, 128})
    for (int32_t group : {2, 3}) {
      if (!check_kv_head_dim(t, hd).ok()) continue;
      for (int32_t bs : {1, 16}) {
        const PagedBatch b =
            make_batch({{45, 45}, {70, 1}, {33, 6}, {1, 1}, {100, 1}}, bs, 2 * group, 2, hd, 11 + hd + bs + group);
        const TypedPools p = store_pools(b, t);
        ThreadPool pool(2);
        std::vector<float> want(b.out_size());
        ASSERT_TRUE(paged_attention_isa(f32_args(b, p, want.data()), pool, "portable"));
        for (const char* isa : {"portable", "avx2", "avx512"}) {
          if (!isa_runs_or_skip(isa)) continue;
          std::vector<float> got(b.out_size(), -1.0f);
          ASSERT_TRUE(paged_attention_isa(typed_args(b, p, t, got.data()), pool, isa)) << isa;
          ++compared;
          for (float x : got) ASSERT_TRUE(std::isfinite(x)) << isa << ": read an unwritten slot";
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), got.size() * 4))
              << kv_dtype_name(t) << " " << isa << " head_dim " << hd << " group " << group << " block " << bs;
        }
        // The reference path reads the same values: bitwise its own f32 result.
        std::vector<float> ref_typed(b.out_size()), ref_f32(b.out_size());
        paged_attention_reference(typed_args(b, p, t, ref_typed.data()), pool);
        paged_attention_reference(f32_args(b, p, ref_f32.data()), pool);
        ASSERT_EQ(0, std::memcmp(ref_typed.data(), ref_f32.data(), ref_f32.size() * 4)) << "head_dim " << hd;
        for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(want[i], ref_f32[i], 2e-5f) << i;
      }
    }
  EXPECT_GE(compared, 2);
}

TEST_P(PagedAttentionKvDtype, StoringRoundsAndTheOutputStaysClose) {
  const KvDtype t = GetParam();
  const PagedBatch b = make_batch({{64, 64}, {90, 1}}, 16, 4, 2, 64, 3);
  const TypedPools p = store_pools(b, t);
  ThreadPool pool(2);
  std::vector<float> exact(b.out_size()), typed(b.out_size());
  paged_attention(b.args(exact.data()), pool);
  paged_attention(typed_args(b, p, t, typed.data()), pool);
  double max_err = 0;
  for (size_t i = 0; i < exact.size(); ++i) max_err = std::max(max_err, std::fabs(double(exact[i]) - typed[i]));
  // Values are uniform in [-1, 1): f16 keeps 11 bits, bf16 8, Q8_0 about 7 per block.
  const double bound = t == KvDtype::kF16 ? 2e-3 : 2e-2;
  EXPECT_GT(max_err, 0.0) << "storing in " << kv_dtype_name(t) << " rounded nothing";
  EXPECT_LT(max_err, bound) << kv_dtype_name(t);
  RecordProperty(std::string("max_abs_err_") + kv_dtype_name(t), std::to_string(max_err));
}

TEST_P(PagedAttentionKvDtype, ProbeReadsTheStoredValues) {
  const KvDtype t = GetParam();
  PagedBatch b = make_batch({{40, 8}, {70, 1}}, 16, 4, 2, 64, 9);
  const TypedPools p = store_pools(b, t);
  ThreadPool pool(1);
  const int32_t prefix[2] = {10, 33};
  std::vector<float> typed(b.out_size() / 64), f32(b.out_size() / 64);
  attention_prefix_mass(typed_args(b, p, t, nullptr), prefix, typed.data(), pool);
  attention_prefix_mass(f32_args(b, p, nullptr), prefix, f32.data(), pool);
  EXPECT_EQ(0, std::memcmp(typed.data(), f32.data(), f32.size() * 4));
}

// A prefill chunk's queries run kQueryGroup at a time, over key tiles staged once as f32 for all of them (and for
// every head of a KV head): each token still gets the bits it gets as a decode step by itself (one query, read
// straight from the cache when it is one head alone), over the typed cache and over the f32 cache of the same
// values, with and without kv_begin, in every ISA build. The chunk (37 tokens ending at key 300) crosses tiles and
// segments, so queries differ in their last tile.
TEST_P(PagedAttentionKvDtype, PrefillQueriesRunTogetherGiveEachTokenItsDecodeBits) {
  const KvDtype t = GetParam();
  int compared = 0;
  for (int32_t group : {1, 4})
    for (int32_t hd : {64, 96})
      for (int32_t begin : {0, 40}) {
        if (!check_kv_head_dim(t, hd).ok()) continue;
        const int32_t n_kv = 2, n_heads = n_kv * group, q_len = 37, kv_len = 300;
        PagedBatch b = make_batch({{9, 1}, {kv_len, q_len}}, 16, n_heads, n_kv, hd, 70 + group + hd + begin);
        b.kv_begin = {0, begin};
        const TypedPools p = store_pools(b, t);
        ThreadPool pool(2);
        for (const char* isa : {"portable", "avx2", "avx512"})
          for (bool typed : {true, false}) {
            auto args = [&](const PagedBatch& x, float* out) { return typed ? typed_args(x, p, t, out) : f32_args(x, p, out); };
            if (!isa_runs_or_skip(isa)) continue;
            std::vector<float> out(b.out_size());
            ASSERT_TRUE(paged_attention_isa(args(b, out.data()), pool, isa)) << isa;
            ++compared;
            for (int32_t i = 0; i < q_len; ++i) {
              PagedBatch alone = b;
              alone.cu_seqlens_q = {0, 1};
              alone.seq_lens_kv = {kv_len - q_len + i + 1};
              alone.kv_begin = {begin};
              alone.block_table.assign(b.block_table.begin() + b.max_blocks, b.block_table.begin() + 2 * b.max_blocks);
              const int64_t row = static_cast<int64_t>(1 + i) * n_heads * hd;  // the decode sequence's token is row 0
              alone.q.assign(b.q.begin() + row, b.q.begin() + row + n_heads * hd);
              std::vector<float> single(alone.q.size());
              ASSERT_TRUE(paged_attention_isa(args(alone, single.data()), pool, isa));
              ASSERT_EQ(0, std::memcmp(single.data(), out.data() + row, single.size() * 4))
                  << kv_dtype_name(t) << (typed ? "" : " (as f32)") << " " << isa << " group " << group << " head_dim "
                  << hd << " kv_begin " << begin << " query " << i;
            }
          }
      }
  EXPECT_GE(compared, 4);
}

// A decode batch with at least two decode queries a thread runs each query's heads, every KV head, as one job that
// reads the tiles' slots whole (paged_attention_impl.h's run_tiles): each sequence still gets the bits it gets as a
// decode step by itself (one query: a job per head or per KV head), over the typed cache and over the f32 cache of
// the same values, with kv_begin, with split-KV never / auto / always (a whole-slot job split into its segments:
// the 300- and 600-key sequences), beside a prefill chunk, in every ISA build.
TEST_P(PagedAttentionKvDtype, DecodeBatchOfWholeSlotJobsGivesEachSequenceItsAloneBits) {
  const KvDtype t = GetParam();
  int compared = 0;
  const std::vector<SeqSpec> specs = {{1, 1}, {31, 1}, {33, 1}, {300, 1}, {40, 5}, {70, 1}, {600, 1}};
  for (int32_t group : {1, 3})
    for (int32_t hd : {64, 96}) {
      if (!check_kv_head_dim(t, hd).ok()) continue;
      const int32_t n_kv = 3, n_heads = n_kv * group;
      PagedBatch b = make_batch(specs, 16, n_heads, n_kv, hd, 500 + group + hd);
      b.kv_begin = {0, 0, 5, 40, 0, 0, 260};
      const TypedPools p = store_pools(b, t);
      ThreadPool pool(2);
      for (const char* isa : {"portable", "avx2", "avx512"}) {
        if (!isa_runs_or_skip(isa)) continue;
        for (SplitKv split : {SplitKv::kNever, SplitKv::kAuto, SplitKv::kAlways})
          for (bool typed : {true, false}) {
            auto args = [&](const PagedBatch& x, float* out) {
              PagedAttentionArgs a = typed ? typed_args(x, p, t, out) : f32_args(x, p, out);
              a.split_kv = split;
              return a;
            };
            std::vector<float> out(b.out_size());
            ASSERT_TRUE(paged_attention_isa(args(b, out.data()), pool, isa)) << isa;
            ++compared;
            for (size_t s = 0; s < specs.size(); ++s) {
              if (specs[s].q_len != 1) continue;
              PagedBatch alone = b;
              alone.cu_seqlens_q = {0, 1};
              alone.seq_lens_kv = {specs[s].kv_len};
              alone.kv_begin = {b.kv_begin[s]};
              alone.block_table.assign(b.block_table.begin() + s * b.max_blocks,
                                       b.block_table.begin() + (s + 1) * b.max_blocks);
              const int64_t row = static_cast<int64_t>(b.cu_seqlens_q[s]) * n_heads * hd;
              alone.q.assign(b.q.begin() + row, b.q.begin() + row + n_heads * hd);
              std::vector<float> single(alone.q.size());
              ASSERT_TRUE(paged_attention_isa(args(alone, single.data()), pool, isa));
              for (float x : single) ASSERT_TRUE(std::isfinite(x)) << isa << ": read an unwritten slot";
              ASSERT_EQ(0, std::memcmp(single.data(), out.data() + row, single.size() * 4))
                  << kv_dtype_name(t) << (typed ? "" : " (as f32)") << " " << isa << " group " << group << " head_dim "
                  << hd << " split " << static_cast<int>(split) << " sequence " << s;
            }
          }
      }
    }
  EXPECT_GE(compared, 12);
}

INSTANTIATE_TEST_SUITE_P(Types, PagedAttentionKvDtype,
                         ::testing::Values(KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0),
                         [](const auto& info) { return std::string(kv_dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda
