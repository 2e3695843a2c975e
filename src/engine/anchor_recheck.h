// Re-checking a pinned anchor during decoding, for benchmarking only (pagoda bench anchors, the verification-cadence
// ablation of docs/anchor-benchmark.md). pagoda's design verifies an anchor once, at registration (cadence
// `session`), and never looks at it on the token path. The anchor paper claimed that verifying synchronously on the
// host while decoding costs about 30x; these cadences reproduce that design so the claim can be measured:
//   session  nothing after registration (the default; the engine does no work here)
//   segment  at every admission of a request that names the anchor
//   block    every 16 generated tokens of every sequence that uses the anchor
//   token    every generated token of every sequence that uses the anchor
//   step     once per engine step for each anchor that a sequence sampling in that step uses (one check shared by
//            the batch: the per-step design the per-sequence cadences are compared with)
// One re-check = the signature check (Ed25519 over the envelope's PAE, a callback into the anchor module: the
// engine knows digests and tokens only) + SHA-256 over the bytes of the anchor's K/V blocks in every layer,
// compared with the digest taken right after the anchor's prefill. Both run synchronously on the engine thread,
// inside the step, per sequence (the paper's design: each request checks its memory), except `step`, which checks
// each anchor once per step for all its sequences (1/C of `token` at concurrency C). A failed re-check ends the
// sequences it covers with an error.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "anchor/ed25519.h"
#include "kv/block_types.h"
#include "kv/kv_pool.h"
#include "util/result.h"

namespace pagoda {

enum class AnchorRecheckCadence { kSession, kSegment, kBlock, kToken, kStep };

inline constexpr int32_t kAnchorRecheckBlockTokens = 16;  // the `block` cadence's period in generated tokens

const char* anchor_recheck_cadence_name(AnchorRecheckCadence c);
Result<AnchorRecheckCadence> parse_anchor_recheck_cadence(std::string_view name);

struct AnchorRecheck {
  AnchorRecheckCadence cadence = AnchorRecheckCadence::kSession;
  // The signature part, by digest: OK when the anchor's envelope still verifies. Required unless the cadence is
  // session.
  std::function<Status(const std::string& digest)> verify_signature;
};

// SHA-256 over the K/V bytes of slots [0, num_tokens) of `blocks` (a pinned sequence's block table): per layer, K
// then V, block by block in table order. [layer][K|V][token][n_kv_heads * head_dim] elements of the pool's type.
Sha256Digest hash_kv_blocks(const KvPool& pool, std::span<const BlockHandle> blocks, int64_t num_tokens);

}  // namespace pagoda
