#include "engine/anchor_recheck.h"

#include <algorithm>

#include "util/sha256.h"

namespace pagoda {

const char* anchor_recheck_cadence_name(AnchorRecheckCadence c) {
  switch (c) {
    case AnchorRecheckCadence::kSession: return "session";
    case AnchorRecheckCadence::kSegment: return "segment";
    case AnchorRecheckCadence::kBlock: return "block";
    case AnchorRecheckCadence::kToken: return "token";
    case AnchorRecheckCadence::kStep: return "step";
  }
  return "?";
}

Result<AnchorRecheckCadence> parse_anchor_recheck_cadence(std::string_view name) {
  for (auto c : {AnchorRecheckCadence::kSession, AnchorRecheckCadence::kSegment, AnchorRecheckCadence::kBlock,
                 AnchorRecheckCadence::kToken, AnchorRecheckCadence::kStep})
    if (name == anchor_recheck_cadence_name(c)) return c;
  return make_error("unknown verification cadence '" + std::string(name) + "' (session, segment, block, token, step)");
}

Sha256Digest hash_kv_blocks(const KvPool& pool, std::span<const BlockHandle> blocks, int64_t num_tokens) {
  // OpenSSL's SHA-256 (util/sha256.h: SHA-NI where the CPU has it, 1.5-2 GB/s) rather than libsodium's portable
  // one (about 0.35 GB/s here): the ablation must not inflate the re-check's cost with a slow hash.
  const KvPoolShape& shape = pool.shape();
  const int64_t slot_bytes = shape.slot_bytes();
  Sha256 hash;
  for (int64_t layer = 0; layer < shape.n_layer; ++layer) {
    for (const uint8_t* base : {pool.k(layer), pool.v(layer)}) {
      int64_t left = num_tokens;
      for (const BlockHandle& h : blocks) {
        if (left <= 0) break;
        const int64_t n = std::min<int64_t>(left, shape.block_size);
        const uint8_t* first = base + static_cast<int64_t>(h.id.value) * shape.block_size * slot_bytes;
        hash.update(first, static_cast<size_t>(n * slot_bytes));
        left -= n;
      }
    }
  }
  return hash.finish();
}

}  // namespace pagoda
