#include "warmstart/prompt_state.h"

#include <cstring>

#include "model/forward_batch.h"
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

  // One sequence over the contiguous cache (slot = position, one block), the last token's logits.
  const int32_t block0 = 0;
  SingleSequenceBatch single;
  ForwardBatch batch = single.make(tokens, 0, /*all_logits=*/false, std::span<const int32_t>(&block0, 1));
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
