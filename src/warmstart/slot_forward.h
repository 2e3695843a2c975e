// Warm start's first token: the prompt's last token runs at position n_slots through the unchanged model, its
// attention reading the slot rows (logit q.k_j * scale + bias_j) and its own key, instead of a paged cache.
#pragma once

#include <vector>

#include "model/model.h"
#include "model/transformer.h"
#include "util/result.h"
#include "util/thread_pool.h"
#include "warmstart/slot_cache.h"

namespace pagoda::warmstart {

// logits: [n_vocab].
Status slot_forward(const Model& model, int32_t token, const SlotCache& slots, ThreadPool& pool,
                    TransformerWorkspace& ws, std::vector<float>& logits);

}  // namespace pagoda::warmstart
