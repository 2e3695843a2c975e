// The KV block manager: the only code that changes block ownership.
//
// Blocks are fixed-size pages of KV slots. Each sequence owns a block table (logical block i -> physical block).
// A block is in exactly one of three states:
//   free               on the free list, reference count 0, no prefix key;
//   in use             reference count > 0 (the number of block-table entries pointing at it);
//   cached, unreferenced  reference count 0 but holding a full block's K/V under a prefix key; reusable by a later
//                      prefix hit, evicted least-recently-used only when the free list is empty.
// Full blocks whose K/V have been computed are registered under key = SHA-256(parent key, tokens, namespace);
// a hit also compares the tokens. The last, partial block of a sequence is never shared through the cache; it
// is shared only by fork(), and the first append to a shared partial block copies it (copy-on-write).
//
// Check-then-act: can_allocate/allocate, can_append/append_slot. Every release path (finish, cancel, preempt,
// error) calls free(seq) once, which drops each of the sequence's references exactly once.
//
// Pinned prefixes (verified anchors): allocate_pinned() gives a sequence blocks that never enter the prefix cache
// (so no prompt can reach them by its tokens) and that stay referenced, hence never evicted, until that sequence is
// freed. A sequence allocated with `prefix` starts from the pinned sequence's full blocks by reference; the pinned
// tail block, if partial, is copied into a block of its own at admission (the request's first prompt token writes
// into it at once), and the prefix-cache keys of everything after chain from the pinned sequence's keys.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/block_key.h"
#include "kv/kv_cache_events.h"
#include "kv/block_types.h"
#include "util/clock.h"
#include "util/result.h"

namespace pagoda {

struct BlockManagerConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  // New sequences are admitted only while this many blocks would stay available, so that running sequences
  // keep room to grow.
  int32_t watermark_blocks = 0;
  // false: no block is looked up or registered in the prefix cache (forks still share their prompt's blocks).
  bool enable_prefix_caching = true;
};

// Copy slots [0, num_slots) of block src into block dst (the K/V of every layer): the engine performs it before
// the step's compute.
struct BlockCopy {
  BlockId src;
  BlockId dst;
  int32_t num_slots = 0;
};

struct BlockManagerStats {
  int32_t num_blocks = 0;
  int32_t free_blocks = 0;
  int32_t used_blocks = 0;          // reference count > 0
  int32_t cached_free_blocks = 0;   // unreferenced but holding reusable prefix K/V
  int64_t prefix_query_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;    // of those, found cached
  int64_t evictions = 0;
  int64_t slack_slots = 0;  // unused slots in the sequences' tail blocks
  int32_t max_seq_slack_slots = 0;  // the largest slack of any one sequence (<= block_size: one tail block)
  int64_t filled_slots = 0;         // slots of in-use blocks holding a token (a shared block counts once)
  int32_t block_size = 0;
  double usage() const { return num_blocks ? static_cast<double>(used_blocks) / num_blocks : 0.0; }
  // Useful tokens per allocated slot: filled / (in-use blocks x block size).
  double useful_slot_fraction() const {
    return used_blocks ? static_cast<double>(filled_slots) / (static_cast<double>(used_blocks) * block_size) : 1.0;
  }
};

class BlockManager {
 public:
  BlockManager(const BlockManagerConfig& config, Clock& clock);

  int32_t block_size() const { return config_.block_size; }
  int32_t num_blocks() const { return config_.num_blocks; }

  // --- admission: reserves the prompt's blocks plus one step of growth.
  // `prefix`, when set, is a pinned sequence whose tokens are the first tokens of `prompt` (and fewer than all).
  // Whether allocate() can succeed now (prefix hits counted, watermark respected).
  bool can_allocate(std::span<const int32_t> prompt, const CacheNamespace& ns,
                    std::optional<SeqId> prefix = std::nullopt) const;
  // Whether the prompt could ever fit in an empty pool.
  bool could_ever_allocate(size_t prompt_tokens) const;
  // Precondition: can_allocate and seq unknown. Returns how many leading prompt tokens already have K/V (the
  // pinned prefix and cached whole blocks; always fewer than the prompt, so the last prompt token is computed and
  // yields logits). A copy of the pinned prefix's partial tail block, if one is needed, is appended to *copies.
  int64_t allocate(SeqId seq, std::span<const int32_t> prompt, const CacheNamespace& ns,
                   std::optional<SeqId> prefix = std::nullopt, std::vector<BlockCopy>* copies = nullptr);

  // --- pinned prefixes.
  // Blocks for exactly `tokens` (no growth), outside the prefix cache. Precondition: can_allocate_pinned.
  bool can_allocate_pinned(size_t num_tokens) const;
  void allocate_pinned(SeqId seq, std::span<const int32_t> tokens, const CacheNamespace& ns);
  int32_t num_table_blocks(SeqId seq) const { return static_cast<int32_t>(seq_state(seq).table.size()); }

  // --- growth by one token.
  bool can_append(SeqId seq) const;
  // Precondition: can_append. Records the token and returns its slot (block * block_size + offset). Sets *copy
  // when a shared partial block had to be copied first.
  int64_t append_slot(SeqId seq, int32_t token, std::optional<BlockCopy>* copy);

  // The first num_computed tokens of seq now have K/V in their slots: full blocks among them enter the prefix cache.
  void mark_computed(SeqId seq, int64_t num_computed);

  // n > 1 sampling: child shares every block of parent (same tokens so far). Precondition: child unknown.
  void fork(SeqId parent, SeqId child);

  // Releases every block reference of seq exactly once and forgets it.
  void free(SeqId seq);

  // --- views.
  bool has_sequence(SeqId seq) const { return seqs_.count(seq) != 0; }

  // KV-cache events for routers (kv/kv_cache_events.h): recorded from the moment they are enabled (starting with
  // "cleared") and taken by the engine once per step.
  void enable_events();
  std::vector<KvCacheEvent> take_events();
  int64_t num_tokens(SeqId seq) const;
  std::span<const BlockHandle> block_handles(SeqId seq) const;
  // Slot of token `position` of seq.
  int64_t slot_of(SeqId seq, int64_t position) const;
  // False once the block behind the handle has been freed or evicted since the handle was issued.
  bool is_current(const BlockHandle& handle) const;
  int32_t ref_count(BlockId id) const { return blocks_[id.value].ref_count; }
  BlockManagerStats stats() const;

  // Checks every structural invariant (for tests; O(blocks + table entries)).
  Status check_invariants() const;

 private:
  struct Block {
    int32_t ref_count = 0;
    uint32_t generation = 0;
    std::optional<BlockKey> key;  // set while registered in the prefix cache
    std::vector<int32_t> tokens;  // the tokens of a registered block, compared on a hit
    uint64_t last_used_ns = 0;
    bool in_lru = false;
    std::list<BlockId>::iterator lru_pos;
  };
  struct Sequence {
    std::vector<BlockHandle> table;
    std::vector<int32_t> tokens;
    std::vector<BlockKey> keys;  // keys of the leading full, computed blocks
    CacheNamespace ns;
    bool cacheable = true;  // false for pinned prefixes: their blocks are never registered in the cache
  };

  int32_t blocks_for(size_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
  }
  // Leading full blocks of `prompt` found in the cache, with their keys.
  // Starting at block `first_block` of `prompt`, chained from `parent` (the key of the block before).
  std::vector<std::pair<BlockId, BlockKey>> find_cached_prefix(std::span<const int32_t> prompt,
                                                               const CacheNamespace& ns, size_t first_block = 0,
                                                               std::optional<BlockKey> parent = std::nullopt) const;
  // The pinned prefix's full blocks that a prompt starting with it shares (checked against its tokens).
  size_t shared_prefix_blocks(const Sequence& prefix, std::span<const int32_t> prompt) const;
  int32_t available_blocks() const { return static_cast<int32_t>(free_list_.size() + lru_.size()); }
  BlockHandle take_block();  // from the free list, else by evicting the least recently used cached block
  void acquire_cached(BlockId id);
  void release(BlockId id);
  void forget_key(Block& b);
  const Sequence& seq_state(SeqId seq) const;

  BlockManagerConfig config_;
  Clock& clock_;
  std::vector<Block> blocks_;
  std::vector<BlockId> free_list_;
  std::list<BlockId> lru_;  // cached and unreferenced; front = least recently used
  std::unordered_map<BlockKey, BlockId, BlockKeyHasher> cache_index_;
  std::unordered_map<SeqId, Sequence, SeqIdHasher> seqs_;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t evictions_ = 0;
  bool events_on_ = false;
  std::vector<KvCacheEvent> events_;
  std::unordered_set<BlockKey, BlockKeyHasher> announced_;  // stored and not yet removed
  void record_stored(const BlockKey& key, const std::optional<BlockKey>& parent, std::span<const int32_t> tokens);
  void record_removed(const BlockKey& key);
};

}  // namespace pagoda
