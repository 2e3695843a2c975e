// The one-region forward (model/transformer_team.h) against the region-per-step forward (transformer.cpp): the same
// logits and the same stored K/V, bit for bit, for every family, several weight types, every KV type, 1-3 threads,
// mixed batches (a prefill chunk beside decode steps) and a long decode that split-KV spreads over the threads.
#include "model/transformer_team.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kv/kv_dtype.h"
#include "model/transformer.h"
#include "util/rng.h"

namespace pagoda {
namespace {

constexpr int32_t kBlockSize = 16;

// A paged cache for a few sequences: sequence s owns blocks s * max_blocks .. in a scrambled order.
struct PagedCache {
  KvDtype dtype;
  int32_t max_blocks;
  int32_t num_seqs;
  int64_t slot_bytes, num_slots;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> block_table;  // [num_seqs, max_blocks]

  PagedCache(const ModelHParams& hp, KvDtype t, int32_t seqs, int32_t max_tokens)
      : dtype(t), max_blocks((max_tokens + kBlockSize - 1) / kBlockSize), num_seqs(seqs) {
    slot_bytes = kv_bytes(t, hp.kv_dim());
    num_slots = static_cast<int64_t>(seqs) * max_blocks * kBlockSize;
    k.assign(static_cast<size_t>(hp.n_layer * num_slots * slot_bytes), 0);
    v = k;
    block_table.resize(static_cast<size_t>(seqs) * max_blocks);
    const int32_t total = seqs * max_blocks;
    for (int32_t i = 0; i < total; ++i) block_table[i] = (i * 7 + 3) % total;  // 7 is coprime with the totals used
  }
  KvStorage storage() {
    KvStorage s;
    s.k_base = k.data();
    s.v_base = v.data();
    s.dtype = dtype;
    s.layer_stride = num_slots * slot_bytes;
    s.num_slots = num_slots;
    s.block_size = kBlockSize;
    return s;
  }
};

// One step: sequence s appends new_tokens[s] tokens (0: not in the step) after its current length.
struct Step {
  std::vector<int32_t> tokens, positions, cu{0}, seq_lens, logit_rows, table;
  std::vector<int64_t> slots;
  bool all_rows = true;  // logits of every row (prefill rows too), or only of each sequence's last, as the engine asks
  ForwardBatch batch(const PagedCache& c, std::vector<int32_t>& lengths, const std::vector<int32_t>& new_tokens,
                     Rng& rng, int32_t vocab) {
    for (int32_t s = 0; s < c.num_seqs; ++s) {
      if (new_tokens[s] == 0) continue;
      for (int32_t i = 0; i < new_tokens[s]; ++i) {
        const int32_t pos = lengths[s] + i;
        tokens.push_back(static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(vocab)));
        positions.push_back(pos);
        const int32_t block = c.block_table[static_cast<size_t>(s) * c.max_blocks + pos / kBlockSize];
        slots.push_back(static_cast<int64_t>(block) * kBlockSize + pos % kBlockSize);
        if (all_rows || i + 1 == new_tokens[s]) logit_rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
      }
      lengths[s] += new_tokens[s];
      cu.push_back(static_cast<int32_t>(tokens.size()));
      seq_lens.push_back(lengths[s]);
      table.insert(table.end(), c.block_table.begin() + static_cast<size_t>(s) * c.max_blocks,
                   c.block_table.begin() + static_cast<size_t>(s + 1) * c.max_blocks);
    }
    ForwardBatch b;
    b.tokens = tokens;
    b.positions = positions;
    b.slot_mapping = slots;
    b.cu_seqlens_q = cu;
    b.seq_lens_kv = seq_lens;
    b.block_table = table;
    b.max_blocks = c.max_blocks;
    b.logit_rows = logit_rows;
    return b;
  }
};

// Runs `steps` (new tokens per sequence) through both schedules on caches of their own and compares every step's
// logits and, at the end, every stored K/V byte.
void expect_same_bits(const std::string& path, KvDtype dtype, int threads,
                      const std::vector<std::vector<int32_t>>& steps, bool all_rows = true) {
  SCOPED_TRACE(path + ", kv " + kv_dtype_name(dtype) + ", " + std::to_string(threads) + " threads" +
               (all_rows ? "" : ", last rows' logits"));
  auto loaded = Model::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Model& model = **loaded;
  const ModelHParams& hp = model.hparams();
  if (!check_kv_head_dim(dtype, hp.head_dim).ok()) return;  // (q8_0 needs head_dim % 32 == 0)
  const int32_t seqs = static_cast<int32_t>(steps[0].size());
  int32_t longest = 0;
  {
    std::vector<int32_t> total(seqs, 0);
    for (const auto& s : steps)
      for (int32_t i = 0; i < seqs; ++i) longest = std::max(longest, total[i] += s[i]);
  }
  ASSERT_LE(longest, hp.n_ctx_train);
  PagedCache team_cache(hp, dtype, seqs, longest), step_cache(hp, dtype, seqs, longest);
  TransformerWorkspace team_ws, step_ws;
  ThreadPool pool(threads);
  std::vector<int32_t> team_len(seqs, 0), step_len(seqs, 0);
  Rng team_rng(11), step_rng(11);
  std::vector<float> team_logits, step_logits;
  for (size_t i = 0; i < steps.size(); ++i) {
    Step a, b;
    a.all_rows = b.all_rows = all_rows;
    const ForwardBatch team_batch = a.batch(team_cache, team_len, steps[i], team_rng, static_cast<int32_t>(hp.n_vocab));
    const ForwardBatch step_batch = b.batch(step_cache, step_len, steps[i], step_rng, static_cast<int32_t>(hp.n_vocab));
    const int64_t T = static_cast<int64_t>(team_batch.tokens.size());
    if (T < 16) {
      EXPECT_TRUE(transformer_team_applies(model, team_batch, T, AttentionImpl::kFused)) << "step " << i;
    }
    ASSERT_TRUE(transformer_forward_batch(model, team_batch, team_cache.storage(), team_ws, pool, team_logits).ok());
    ASSERT_TRUE(transformer_forward_batch(model, step_batch, step_cache.storage(), step_ws, pool, step_logits,
                                          AttentionImpl::kFused, ForwardSchedule::kRegionPerStep)
                    .ok());
    ASSERT_EQ(team_logits.size(), step_logits.size());
    ASSERT_EQ(0, std::memcmp(team_logits.data(), step_logits.data(), team_logits.size() * sizeof(float)))
        << "logits differ at step " << i << " (" << T << " tokens)";
  }
  EXPECT_TRUE(team_cache.k == step_cache.k) << "stored K differ";
  EXPECT_TRUE(team_cache.v == step_cache.v) << "stored V differ";
}

std::string shared(const std::string& rel) { return std::string(PAGODA_SHARED_DIR) + "/models/" + rel; }

// Three sequences: a prompt each (a prefill chunk), then decode steps, one sequence joining late with a prefill
// chunk beside the others' decode steps, and a step where one sequence sits out.
const std::vector<std::vector<int32_t>> kMixed = {{9, 0, 3}, {1, 0, 1}, {1, 12, 1}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}};

TEST(TransformerTeam, EveryFamilyGivesTheBitsOfTheRegionPerStepForward) {
  for (const char* arch : {"llama", "gpt2", "gptneox", "phi3", "qwen2", "qwen3"})
    for (int threads : {1, 2, 3})
      expect_same_bits(shared(std::string("arch/") + arch + ".gguf"), KvDtype::kF16, threads, kMixed);
}

// More threads than heads and than row granules of some matrices (idle threads still meet every barrier), and the
// engine's logits (each sequence's last row only, fewer rows than tokens).
TEST(TransformerTeam, MoreThreadsThanHeadsAndLastRowLogitsGiveTheSameBits) {
  for (int threads : {8, 17}) expect_same_bits(shared("stories260K.gguf"), KvDtype::kF16, threads, kMixed);
  for (int threads : {2, 3}) {
    expect_same_bits(shared("stories260K.gguf"), KvDtype::kF16, threads, kMixed, /*all_rows=*/false);
    expect_same_bits(shared("arch/qwen3.gguf"), KvDtype::kQ8_0, threads, kMixed, /*all_rows=*/false);
  }
}

TEST(TransformerTeam, EveryKvTypeAndQuantizedWeightsGiveTheSameBits) {
  for (const char* file : {"stories260K.gguf", "quant/synth-q-Q4_1.gguf", "quant/synth-q-Q4_K_M.gguf",
                           "quant/synth-q-Q2_K.gguf", "quant/synth-q-IQ4_XS.gguf"})
    for (KvDtype dtype : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16, KvDtype::kQ8_0})
      expect_same_bits(shared(file), dtype, 2, kMixed);
}

// A decode step 600 keys into one sequence: split-KV runs its segments on every thread and folds them after a barrier
// inside the region. The 600-token prompt itself runs region per step (it is not a small batch).
TEST(TransformerTeam, LongDecodeSplitAcrossThreadsGivesTheSameBits) {
  std::vector<std::vector<int32_t>> steps = {{600}};
  for (int i = 0; i < 3; ++i) steps.push_back({1});
  for (int threads : {2, 3})
    for (KvDtype dtype : {KvDtype::kF16, KvDtype::kQ8_0})
      expect_same_bits(shared("quant/synth-q-Q4_K_M.gguf"), dtype, threads, steps);
}

// Logit rows past T would overflow the buffers that gather them: they must be strictly ascending (so at most T).
TEST(TransformerTeam, RepeatedLogitRowsAreAnErrorNotAnOverflow) {
  auto loaded = Model::load(shared("stories260K.gguf"));
  ASSERT_TRUE(loaded.ok());
  const ModelHParams& hp = (**loaded).hparams();
  PagedCache cache(hp, KvDtype::kF16, 1, 16);
  std::vector<int32_t> lengths(1, 0);
  Rng rng(1);
  Step step;
  ForwardBatch batch = step.batch(cache, lengths, {2}, rng, static_cast<int32_t>(hp.n_vocab));
  const std::vector<int32_t> repeated = {1, 1, 1};
  batch.logit_rows = repeated;
  TransformerWorkspace ws;
  ThreadPool pool(2);
  std::vector<float> logits;
  const Status st = transformer_forward_batch(**loaded, batch, cache.storage(), ws, pool, logits);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("strictly ascending"), std::string::npos) << st.error().message;
}

TEST(TransformerTeam, InstrumentedAndLargeBatchesKeepTheRegionPerStepForward) {
  auto loaded = Model::load(shared("stories260K.gguf"));
  ASSERT_TRUE(loaded.ok());
  const Model& model = **loaded;
  std::vector<int32_t> tokens(64, 1);
  ForwardBatch b;
  b.tokens = std::span<const int32_t>(tokens.data(), 1);
  EXPECT_TRUE(transformer_team_applies(model, b, 1, AttentionImpl::kFused));
  EXPECT_FALSE(transformer_team_applies(model, b, 1, AttentionImpl::kReference));
  EXPECT_FALSE(transformer_team_applies(model, b, 64, AttentionImpl::kFused));
  float capture = 0;
  b.query_capture = &capture;
  EXPECT_FALSE(transformer_team_applies(model, b, 1, AttentionImpl::kFused));
}

}  // namespace
}  // namespace pagoda
