#include "kv/kv_cache_events.h"

namespace pagoda {

uint64_t block_event_hash(const BlockKey& key) {
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i) h = (h << 8) | key[static_cast<size_t>(i)];
  return h == 0 ? 1 : h;  // 0 is no hash at all to a router
}

}  // namespace pagoda
