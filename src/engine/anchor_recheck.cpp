#include "engine/anchor_recheck.h"

#include <sodium.h>

#include <algorithm>

namespace pagoda {

const char* anchor_recheck_cadence_name(AnchorRecheckCadence c) {
  switch (c) {
    case AnchorRecheckCadence::kSession: return "session";
    case AnchorRecheckCadence::kSegment: return "segment";
    case AnchorRecheckCadence::kBlock: return "block";
    case AnchorRecheckCadence::kToken: return "token";
  }
  return "?";
}

Result<AnchorRecheckCadence> parse_anchor_recheck_cadence(std::string_view name) {
  for (auto c : {AnchorRecheckCadence::kSession, AnchorRecheckCadence::kSegment, AnchorRecheckCadence::kBlock,
                 AnchorRecheckCadence::kToken})
    if (name == anchor_recheck_cadence_name(c)) return c;
  return make_error("unknown verification cadence '" + std::string(name) + "' (session, segment, block, token)");
}

Sha256Digest hash_kv_blocks(const KvPool& pool, std::span<const BlockHandle> blocks, int64_t num_tokens) {
  ensure_sodium_initialized();
  const KvPoolShape& shape = pool.shape();
  const int64_t slot_bytes = shape.slot_bytes();
  crypto_hash_sha256_state state;
  crypto_hash_sha256_init(&state);
  for (int64_t layer = 0; layer < shape.n_layer; ++layer) {
    for (const uint8_t* base : {pool.k(layer), pool.v(layer)}) {
      int64_t left = num_tokens;
      for (const BlockHandle& h : blocks) {
        if (left <= 0) break;
        const int64_t n = std::min<int64_t>(left, shape.block_size);
        const uint8_t* first = base + static_cast<int64_t>(h.id.value) * shape.block_size * slot_bytes;
        crypto_hash_sha256_update(&state, first, static_cast<unsigned long long>(n * slot_bytes));
        left -= n;
      }
    }
  }
  Sha256Digest digest;
  crypto_hash_sha256_final(&state, digest.data());
  return digest;
}

}  // namespace pagoda
