#include "warmstart/prompt_state.h"

#include <cstring>

#include "model/kv_cache.h"

namespace pagoda::warmstart {

Result<PromptState> run_prompt(const Model& model, std::span<const int32_t> tokens, ThreadPool& pool,
                               TransformerWorkspace& ws) {
  const ModelHParams& hp = model.hparams();
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) return make_error("warm start: an empty prompt");
  PAGODA_RETURN_IF_ERROR(ContiguousKvCache::check_size(hp, T, KvDtype::kF32));
  ContiguousKvCache cache(hp, T, KvDtype::kF32);
  PromptState state;
  state.n_tokens = T;
  state.q.resize(static_cast<size_t>(hp.n_layer * T * hp.q_dim()));

  std::vector<int32_t> positions(T);
  std::vector<int64_t> slots(T);
  for (int64_t t = 0; t < T; ++t) slots[t] = positions[t] = static_cast<int32_t>(t);
  const int32_t cu[2] = {0, static_cast<int32_t>(T)};
  const int32_t kv_len = static_cast<int32_t>(T);
  const int32_t block0 = 0;
  const int32_t last = static_cast<int32_t>(T - 1);
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.positions = positions;
  batch.slot_mapping = slots;
  batch.cu_seqlens_q = cu;
  batch.seq_lens_kv = std::span<const int32_t>(&kv_len, 1);
  batch.block_table = std::span<const int32_t>(&block0, 1);
  batch.max_blocks = 1;
  batch.logit_rows = std::span<const int32_t>(&last, 1);
  batch.query_capture = state.q.data();
  KvStorage storage;
  storage.k_base = cache.k(0);
  storage.v_base = cache.v(0);
  storage.dtype = KvDtype::kF32;
  storage.layer_stride = cache.capacity() * cache.slot_bytes();
  storage.num_slots = cache.capacity();
  storage.block_size = static_cast<int32_t>(cache.capacity());
  PAGODA_RETURN_IF_ERROR(transformer_forward_batch(model, batch, storage, ws, pool, state.logits));

  const size_t layer_floats = static_cast<size_t>(T * hp.kv_dim());
  state.k.resize(hp.n_layer * layer_floats);
  state.v.resize(hp.n_layer * layer_floats);
  for (int64_t l = 0; l < hp.n_layer; ++l) {
    std::memcpy(state.k.data() + l * layer_floats, cache.k(l), layer_floats * sizeof(float));
    std::memcpy(state.v.data() + l * layer_floats, cache.v(l), layer_floats * sizeof(float));
  }
  return state;
}

}  // namespace pagoda::warmstart
