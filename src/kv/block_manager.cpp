#include "kv/block_manager.h"

#include <algorithm>
#include <cassert>

namespace pagoda {

BlockManager::BlockManager(const BlockManagerConfig& config, Clock& clock)
    : config_(config), clock_(clock), blocks_(config.num_blocks) {
  assert(config.num_blocks > 0 && config.block_size > 0);
  free_list_.reserve(config.num_blocks);
  // Popped from the back: block 0 is handed out first.
  for (int32_t i = config.num_blocks - 1; i >= 0; --i) free_list_.push_back(BlockId{i});
}

const BlockManager::Sequence& BlockManager::seq_state(SeqId seq) const {
  auto it = seqs_.find(seq);
  assert(it != seqs_.end() && "unknown sequence");
  return it->second;
}

std::vector<std::pair<BlockId, BlockKey>> BlockManager::find_cached_prefix(std::span<const int32_t> prompt,
                                                                           const CacheNamespace& ns,
                                                                           size_t first_block,
                                                                           std::optional<BlockKey> parent) const {
  std::vector<std::pair<BlockId, BlockKey>> hits;
  if (prompt.empty() || !config_.enable_prefix_caching) return hits;
  const size_t bs = config_.block_size;
  // The block holding the last prompt token is never taken from the cache: it must be computed for logits.
  const size_t max_blocks = (prompt.size() - 1) / bs;
  for (size_t i = first_block; i < max_blocks; ++i) {
    const auto tokens = prompt.subspan(i * bs, bs);
    const BlockKey key = compute_block_key(parent, tokens, ns);
    auto it = cache_index_.find(key);
    if (it == cache_index_.end()) break;
    const Block& b = blocks_[it->second.value];
    if (!std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end())) break;
    hits.emplace_back(it->second, key);
    parent = key;
  }
  return hits;
}

bool BlockManager::could_ever_allocate(size_t prompt_tokens) const {
  return blocks_for(prompt_tokens + 1) + config_.watermark_blocks <= config_.num_blocks;
}

size_t BlockManager::shared_prefix_blocks(const Sequence& prefix, std::span<const int32_t> prompt) const {
  assert(prefix.tokens.size() < prompt.size() &&
         std::equal(prefix.tokens.begin(), prefix.tokens.end(), prompt.begin()) && "prefix must start the prompt");
  (void)prompt;
  return prefix.tokens.size() / config_.block_size;
}

bool BlockManager::can_allocate(std::span<const int32_t> prompt, const CacheNamespace& ns,
                                std::optional<SeqId> prefix) const {
  size_t shared = 0;
  std::optional<BlockKey> parent;
  if (prefix) {
    const Sequence& p = seq_state(*prefix);
    shared = shared_prefix_blocks(p, prompt);
    if (shared) parent = p.keys[shared - 1];
  }
  const auto hits = find_cached_prefix(prompt, ns, shared, parent);
  int32_t hits_from_lru = 0;
  for (const auto& [id, key] : hits)
    if (blocks_[id.value].ref_count == 0) ++hits_from_lru;
  const int32_t needed =
      blocks_for(prompt.size() + 1) - static_cast<int32_t>(shared) - static_cast<int32_t>(hits.size());
  return needed + config_.watermark_blocks <= available_blocks() - hits_from_lru;
}

int64_t BlockManager::allocate(SeqId seq, std::span<const int32_t> prompt, const CacheNamespace& ns,
                               std::optional<SeqId> prefix, std::vector<BlockCopy>* copies) {
  assert(!has_sequence(seq));
  assert(can_allocate(prompt, ns, prefix));
  Sequence s;
  s.ns = ns;
  s.tokens.assign(prompt.begin(), prompt.end());
  size_t shared = 0;
  int64_t pinned_tokens = 0;
  std::optional<BlockKey> parent;
  const Sequence* p = prefix ? &seq_state(*prefix) : nullptr;
  if (p) {
    shared = shared_prefix_blocks(*p, prompt);
    assert(p->keys.size() >= shared && "the pinned prefix is computed before use");
    for (size_t i = 0; i < shared; ++i) {
      ++blocks_[p->table[i].id.value].ref_count;
      s.table.push_back(p->table[i]);
      s.keys.push_back(p->keys[i]);
    }
    if (shared) parent = p->keys[shared - 1];
    pinned_tokens = static_cast<int64_t>(p->tokens.size());
  }
  const auto hits = find_cached_prefix(prompt, ns, shared, parent);
  for (const auto& [id, key] : hits) {
    acquire_cached(id);
    s.table.push_back(BlockHandle{id, blocks_[id.value].generation});
    s.keys.push_back(key);
  }
  const size_t bs = config_.block_size;
  const int32_t tail = static_cast<int32_t>(pinned_tokens % static_cast<int64_t>(bs));
  const bool copy_tail = p && hits.empty() && tail > 0;
  const int32_t total = blocks_for(prompt.size() + 1);
  while (static_cast<int32_t>(s.table.size()) < total) s.table.push_back(take_block());
  if (copy_tail) {
    assert(copies && "a partial pinned tail needs a copy");
    copies->push_back(BlockCopy{p->table[shared].id, s.table[shared].id, tail});
  }
  prefix_query_tokens_ += static_cast<int64_t>(prompt.size()) - pinned_tokens;
  const int64_t cached_blocks = static_cast<int64_t>(shared + hits.size()) * static_cast<int64_t>(bs);
  prefix_hit_tokens_ += static_cast<int64_t>(hits.size()) * static_cast<int64_t>(bs);
  seqs_.emplace(seq, std::move(s));
  return std::max(cached_blocks, pinned_tokens);
}

bool BlockManager::can_allocate_pinned(size_t num_tokens) const {
  return num_tokens > 0 && blocks_for(num_tokens) <= available_blocks();
}

void BlockManager::allocate_pinned(SeqId seq, std::span<const int32_t> tokens, const CacheNamespace& ns) {
  assert(!has_sequence(seq));
  assert(can_allocate_pinned(tokens.size()));
  Sequence s;
  s.ns = ns;
  s.cacheable = false;
  s.tokens.assign(tokens.begin(), tokens.end());
  while (static_cast<int32_t>(s.table.size()) < blocks_for(tokens.size())) s.table.push_back(take_block());
  seqs_.emplace(seq, std::move(s));
}

bool BlockManager::can_append(SeqId seq) const {
  const Sequence& s = seq_state(seq);
  const size_t index = s.tokens.size() / config_.block_size;
  const bool needs_block = index == s.table.size() || blocks_[s.table[index].id.value].ref_count > 1;
  return !needs_block || available_blocks() >= 1;
}

int64_t BlockManager::append_slot(SeqId seq, int32_t token, std::optional<BlockCopy>* copy) {
  assert(can_append(seq));
  Sequence& s = seqs_.at(seq);
  const int64_t pos = static_cast<int64_t>(s.tokens.size());
  const size_t index = pos / config_.block_size;
  const int32_t offset = static_cast<int32_t>(pos % config_.block_size);
  if (copy) copy->reset();
  if (index == s.table.size()) {
    s.table.push_back(take_block());
  } else if (blocks_[s.table[index].id.value].ref_count > 1) {
    // Copy-on-write: this sequence gets a private copy of the shared partial block.
    const BlockId shared = s.table[index].id;
    assert(!blocks_[shared.value].key && "registered blocks are full and never written");
    s.table[index] = take_block();
    release(shared);
    if (copy) *copy = BlockCopy{shared, s.table[index].id, offset};
  }
  s.tokens.push_back(token);
  return static_cast<int64_t>(s.table[index].id.value) * config_.block_size + offset;
}

void BlockManager::mark_computed(SeqId seq, int64_t num_computed) {
  Sequence& s = seqs_.at(seq);
  assert(num_computed <= static_cast<int64_t>(s.tokens.size()));
  // A pinned prefix computes its keys (what follows it chains from them) even with the cache off.
  if (!config_.enable_prefix_caching && s.cacheable) return;
  const size_t bs = config_.block_size;
  while ((s.keys.size() + 1) * bs <= static_cast<size_t>(num_computed)) {
    const size_t i = s.keys.size();
    const std::span<const int32_t> tokens(s.tokens.data() + i * bs, bs);
    const BlockKey key = compute_block_key(i ? std::optional<BlockKey>(s.keys[i - 1]) : std::nullopt, tokens, s.ns);
    s.keys.push_back(key);
    if (!s.cacheable) continue;
    Block& b = blocks_[s.table[i].id.value];
    // A block already registered (shared via fork), or a key another sequence registered first, stays as is.
    if (b.key || cache_index_.count(key)) continue;
    b.key = key;
    b.tokens.assign(tokens.begin(), tokens.end());
    cache_index_.emplace(key, s.table[i].id);
    if (events_on_) {
      announced_.insert(key);
      record_stored(key, i ? std::optional<BlockKey>(s.keys[i - 1]) : std::nullopt, tokens);
    }
  }
}

void BlockManager::enable_events() {
  if (events_on_) return;
  events_on_ = true;
  // What a subscriber knew of this cache before is gone (a replica that starts has an empty cache; one that
  // enables events late re-announces nothing it stored before): start from "cleared".
  KvCacheEvent cleared;
  cleared.kind = KvCacheEvent::Kind::kCleared;
  events_.push_back(std::move(cleared));
  // Blocks cached before now were never announced: their eviction is not announced either (announced_).
}

std::vector<KvCacheEvent> BlockManager::take_events() {
  std::vector<KvCacheEvent> out;
  out.swap(events_);
  return out;
}

void BlockManager::record_stored(const BlockKey& key, const std::optional<BlockKey>& parent,
                                 std::span<const int32_t> tokens) {
  const uint64_t hash = block_event_hash(key);
  const std::optional<uint64_t> parent_hash = parent ? std::optional<uint64_t>(block_event_hash(*parent)) : std::nullopt;
  // A chain grows in one event: this block continues the last stored one.
  if (!events_.empty() && events_.back().kind == KvCacheEvent::Kind::kStored && parent_hash &&
      events_.back().block_hashes.back() == *parent_hash) {
    events_.back().block_hashes.push_back(hash);
    events_.back().token_ids.insert(events_.back().token_ids.end(), tokens.begin(), tokens.end());
    return;
  }
  KvCacheEvent e;
  e.kind = KvCacheEvent::Kind::kStored;
  e.block_hashes = {hash};
  e.parent_hash = parent_hash;
  e.token_ids.assign(tokens.begin(), tokens.end());
  e.block_size = config_.block_size;
  events_.push_back(std::move(e));
}

void BlockManager::record_removed(const BlockKey& key) {
  const uint64_t hash = block_event_hash(key);
  if (!events_.empty() && events_.back().kind == KvCacheEvent::Kind::kRemoved) {
    events_.back().block_hashes.push_back(hash);
    return;
  }
  KvCacheEvent e;
  e.kind = KvCacheEvent::Kind::kRemoved;
  e.block_hashes = {hash};
  events_.push_back(std::move(e));
}

void BlockManager::fork(SeqId parent, SeqId child) {
  assert(!has_sequence(child));
  Sequence s = seq_state(parent);
  for (const BlockHandle& h : s.table) ++blocks_[h.id.value].ref_count;
  seqs_.emplace(child, std::move(s));
}

void BlockManager::free(SeqId seq) {
  auto it = seqs_.find(seq);
  assert(it != seqs_.end());
  // Tail blocks first, so that under LRU a cached chain loses its end before its beginning.
  for (auto h = it->second.table.rbegin(); h != it->second.table.rend(); ++h) {
    assert(is_current(*h));
    release(h->id);
  }
  seqs_.erase(it);
}

BlockHandle BlockManager::take_block() {
  BlockId id;
  if (!free_list_.empty()) {
    id = free_list_.back();
    free_list_.pop_back();
  } else {
    assert(!lru_.empty() && "callers check availability first");
    id = lru_.front();
    lru_.pop_front();
    Block& b = blocks_[id.value];
    b.in_lru = false;
    forget_key(b);
    ++b.generation;
    ++evictions_;
  }
  Block& b = blocks_[id.value];
  assert(b.ref_count == 0);
  b.ref_count = 1;
  return BlockHandle{id, b.generation};
}

void BlockManager::acquire_cached(BlockId id) {
  Block& b = blocks_[id.value];
  if (b.ref_count == 0) {
    assert(b.in_lru);
    lru_.erase(b.lru_pos);
    b.in_lru = false;
  }
  ++b.ref_count;
}

void BlockManager::release(BlockId id) {
  Block& b = blocks_[id.value];
  assert(b.ref_count > 0);
  if (--b.ref_count > 0) return;
  if (b.key) {
    b.last_used_ns = clock_.now_ns();
    b.lru_pos = lru_.insert(lru_.end(), id);
    b.in_lru = true;
  } else {
    ++b.generation;
    free_list_.push_back(id);
  }
}

void BlockManager::forget_key(Block& b) {
  if (!b.key) return;
  if (events_on_ && announced_.erase(*b.key)) record_removed(*b.key);
  cache_index_.erase(*b.key);
  b.key.reset();
  b.tokens.clear();
}

int64_t BlockManager::num_tokens(SeqId seq) const { return static_cast<int64_t>(seq_state(seq).tokens.size()); }

std::span<const BlockHandle> BlockManager::block_handles(SeqId seq) const { return seq_state(seq).table; }

int64_t BlockManager::slot_of(SeqId seq, int64_t position) const {
  const Sequence& s = seq_state(seq);
  const size_t index = position / config_.block_size;
  assert(index < s.table.size());
  return static_cast<int64_t>(s.table[index].id.value) * config_.block_size + position % config_.block_size;
}

bool BlockManager::is_current(const BlockHandle& h) const {
  return h.id.value >= 0 && h.id.value < config_.num_blocks && blocks_[h.id.value].generation == h.generation &&
         blocks_[h.id.value].ref_count > 0;
}

BlockManagerStats BlockManager::stats() const {
  BlockManagerStats st;
  st.num_blocks = config_.num_blocks;
  st.free_blocks = static_cast<int32_t>(free_list_.size());
  st.cached_free_blocks = static_cast<int32_t>(lru_.size());
  st.used_blocks = st.num_blocks - st.free_blocks - st.cached_free_blocks;
  st.prefix_query_tokens = prefix_query_tokens_;
  st.prefix_hit_tokens = prefix_hit_tokens_;
  st.evictions = evictions_;
  st.block_size = config_.block_size;
  std::vector<int32_t> fill(seqs_.empty() ? 0 : config_.num_blocks, 0);
  for (const auto& [id, s] : seqs_) {
    const int64_t slack =
        static_cast<int64_t>(s.table.size()) * config_.block_size - static_cast<int64_t>(s.tokens.size());
    st.slack_slots += slack;
    st.max_seq_slack_slots = std::max(st.max_seq_slack_slots, static_cast<int32_t>(slack));
    for (size_t b = 0; b < s.table.size(); ++b) {
      const int64_t in_block = std::min<int64_t>(
          config_.block_size,
          std::max<int64_t>(0, static_cast<int64_t>(s.tokens.size()) - static_cast<int64_t>(b) * config_.block_size));
      int32_t& f = fill[s.table[b].id.value];
      f = std::max(f, static_cast<int32_t>(in_block));
    }
  }
  for (int32_t f : fill) st.filled_slots += f;
  return st;
}

Status BlockManager::check_invariants() const {
  const int32_t n = config_.num_blocks;
  std::vector<int32_t> refs(n, 0);
  for (const auto& [seq, s] : seqs_) {
    if (s.table.size() != static_cast<size_t>(blocks_for(s.tokens.size())) &&
        s.table.size() != static_cast<size_t>(blocks_for(s.tokens.size() + 1)))
      return make_error("sequence " + std::to_string(seq.value) + " has a block table of the wrong length");
    for (const BlockHandle& h : s.table) {
      if (h.id.value < 0 || h.id.value >= n) return make_error("block table entry out of range");
      if (blocks_[h.id.value].generation != h.generation)
        return make_error("sequence " + std::to_string(seq.value) + " holds a stale handle to block " +
                          std::to_string(h.id.value));
      ++refs[h.id.value];
    }
  }
  std::vector<uint8_t> on_free(n, 0);
  for (BlockId id : free_list_) {
    if (on_free[id.value]++) return make_error("block " + std::to_string(id.value) + " is on the free list twice");
  }
  size_t lru_count = 0;
  for (BlockId id : lru_) {
    ++lru_count;
    const Block& b = blocks_[id.value];
    if (!b.in_lru || b.ref_count != 0 || !b.key)
      return make_error("LRU block " + std::to_string(id.value) + " is not cached-unreferenced");
    if (on_free[id.value]) return make_error("block " + std::to_string(id.value) + " is both free and cached");
  }
  for (int32_t i = 0; i < n; ++i) {
    const Block& b = blocks_[i];
    const std::string name = "block " + std::to_string(i);
    if (b.ref_count != refs[i])
      return make_error(name + " has reference count " + std::to_string(b.ref_count) + " but " +
                        std::to_string(refs[i]) + " table entries");
    if (on_free[i] && (b.ref_count != 0 || b.key)) return make_error(name + " is free but referenced or keyed");
    const bool cached_free = b.ref_count == 0 && !on_free[i];
    if (cached_free != b.in_lru) return make_error(name + " is unreferenced but neither free nor in the LRU list");
    if (b.key) {
      auto it = cache_index_.find(*b.key);
      if (it == cache_index_.end() || it->second.value != i) return make_error(name + " has a key the index lacks");
      if (static_cast<int32_t>(b.tokens.size()) != config_.block_size)
        return make_error(name + " is keyed but not full");
    }
  }
  for (const auto& [key, id] : cache_index_)
    if (!blocks_[id.value].key || *blocks_[id.value].key != key) return make_error("index entry without a keyed block");
  if (free_list_.size() + lru_count +
          static_cast<size_t>(std::count_if(refs.begin(), refs.end(), [](int32_t r) { return r > 0; })) !=
      static_cast<size_t>(n))
    return make_error("free + in use + cached-unreferenced != total");
  return Status::success();
}

}  // namespace pagoda
