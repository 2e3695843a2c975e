#include "engine/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace pagoda {

namespace {
// The admission order: smaller wait key first, then arrival, then choice index.
bool waits_before(const Sequence* a, const Sequence* b) {
  if (a->wait_key_ns != b->wait_key_ns) return a->wait_key_ns < b->wait_key_ns;
  if (a->arrival != b->arrival) return a->arrival < b->arrival;
  return a->index < b->index;
}
}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks, Clock* clock)
    : config_(config), blocks_(blocks), clock_(clock) {
  for (const auto& [name, limits] : with_kv_share_in_blocks(config_.tenants, blocks_.num_blocks())) {
    TenantAccount a;
    a.name = name;
    a.limits = limits;
    accounts_.emplace(name, std::move(a));
  }
}

TenantAccount* Scheduler::account(const std::string& tenant) {
  auto it = accounts_.find(tenant);
  return it == accounts_.end() ? nullptr : &it->second;
}

int64_t Scheduler::wait_key_for(const Sequence& seq, int64_t arrival_ns) const {
  const double horizon = static_cast<double>(config_.aging_horizon_ns);
  const double size = std::min(1.0, static_cast<double>(seq.tokens.size()) /
                                        static_cast<double>(std::max<int64_t>(1, config_.aging_reference_tokens)));
  const int64_t priority = std::clamp<int64_t>(seq.priority, -1000000, 1000000);
  return arrival_ns + priority * config_.aging_horizon_ns + static_cast<int64_t>(horizon * size);
}

void Scheduler::insert_waiting(Sequence* seq) {
  if (!seq->has_wait_key) {  // kept through preemptions: a preempted sequence keeps its place
    seq->wait_key_ns = wait_key_for(*seq, clock_ ? static_cast<int64_t>(clock_->now_ns()) : 0);
    seq->has_wait_key = true;
  }
  seq->state = Sequence::State::kWaiting;
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), seq, waits_before), seq);
}

void Scheduler::add_waiting(Sequence* seq) { insert_waiting(seq); }

void Scheduler::add_running(Sequence* seq) {
  seq->state = Sequence::State::kRunning;
  seq->admitted = ++admissions_;
  running_.push_back(seq);
  count_tenant_hold(seq, +1);
}

void Scheduler::remove(Sequence* seq) {
  if (auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end()) {
    running_.erase(it);
    count_tenant_hold(seq, -1);
    blocks_.free(seq->id);
  } else if (auto w = std::find(waiting_.begin(), waiting_.end(), seq); w != waiting_.end()) {
    waiting_.erase(w);
  }
  seq->state = Sequence::State::kFinished;
}

void Scheduler::preempt(Sequence* seq) {
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  count_tenant_hold(seq, -1);
  blocks_.free(seq->id);
  seq->num_computed = 0;
  ++preemptions_;
  insert_waiting(seq);
}

void Scheduler::recount_tenants() {
  if (accounts_.empty()) return;
  for (auto& [name, a] : accounts_) a.running = a.kv_blocks = 0;
  for (Sequence* s : running_) count_tenant_hold(s, +1);
}

void Scheduler::count_tenant_hold(const Sequence* seq, int sign) {
  if (!seq->tenant) return;
  seq->tenant->running += sign;
  seq->tenant->kv_blocks += sign * blocks_.num_table_blocks(seq->id);
}

int32_t Scheduler::admission_blocks(size_t tokens) const {
  const size_t bs = static_cast<size_t>(blocks_.block_size());
  return static_cast<int32_t>((tokens + 1 + bs - 1) / bs);
}

int64_t Scheduler::prefill_chunk_limit(int64_t position) const {
  const int64_t n = config_.long_prefill_token_threshold;
  if (n <= 0) return INT64_MAX;
  return std::max<int64_t>(1, n * kPrefillDepthReference / (kPrefillDepthReference + position));
}

Sequence* Scheduler::least_urgent_unscheduled(const TenantAccount* only) const {
  Sequence* victim = nullptr;
  for (Sequence* s : running_)
    if (s->scheduled_step != step_ && (!only || s->tenant == only) && (!victim || waits_before(victim, s))) victim = s;
  return victim;
}

bool Scheduler::tenant_blocks_full(const Sequence* s) const {
  const TenantAccount* t = s->tenant;
  if (!t || t->limits.max_kv_blocks <= 0) return false;
  const bool needs_block =
      blocks_.num_tokens(s->id) >= static_cast<int64_t>(blocks_.num_table_blocks(s->id)) * blocks_.block_size();
  return needs_block && t->kv_blocks + 1 > t->limits.max_kv_blocks;
}

SchedulerStep Scheduler::schedule() {
  SchedulerStep out;
  ++step_;
  recount_tenants();
  int64_t budget = config_.max_num_batched_tokens;
  auto take = [&](Sequence* s, int64_t n) {
    s->scheduled_step = step_;
    out.chunks.push_back({s, static_cast<int32_t>(n)});
    out.num_tokens += static_cast<int32_t>(n);
    budget -= n;
  };
  // The tokens of a prefill chunk: what is pending, within the budget and the long-prefill threshold.
  auto chunk = [&](const Sequence* s) {
    return std::min<int64_t>({s->num_pending(), budget, prefill_chunk_limit(s->num_computed)});
  };

  // 1. Decodes of running sequences, oldest admission first.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* s = running_[i];
    if (blocks_.num_tokens(s->id) == static_cast<int64_t>(s->tokens.size())) {
      ++i;  // still prefilling: step 2
      continue;
    }
    bool self_preempted = false;
    for (;;) {
      const bool pool_full = !blocks_.can_append(s->id);
      const bool tenant_full = !pool_full && tenant_blocks_full(s);
      if (!pool_full && !tenant_full) break;
      // The least urgent running sequence not yet scheduled this step gives its blocks back: any sequence when
      // the pool is full, one of the same tenant when the tenant's blocks are.
      const TenantAccount* scope = tenant_full ? s->tenant : nullptr;
      Sequence* victim = least_urgent_unscheduled(scope);
      const bool alone = scope ? scope->running == 1 : running_.size() == 1;
      if (victim == s && alone) {
        // Nothing else (of its tenant) holds blocks: this sequence cannot grow any further.
        remove(s);
        out.out_of_room.push_back(s);
        self_preempted = true;
        break;
      }
      preempt(victim);
      ++out.num_preempted;
      if (victim == s) {
        self_preempted = true;
        break;
      }
      // The victim may have sat before s (a sequence still prefilling): find s again.
      i = static_cast<size_t>(std::find(running_.begin(), running_.end(), s) - running_.begin());
    }
    if (self_preempted) continue;  // running_[i] is now the next sequence
    std::optional<BlockCopy> copy;
    const int32_t table_before = blocks_.num_table_blocks(s->id);
    blocks_.append_slot(s->id, s->tokens.back(), &copy);
    if (s->tenant) s->tenant->kv_blocks += blocks_.num_table_blocks(s->id) - table_before;
    if (copy) out.copies.push_back(*copy);
    take(s, 1);
    ++i;
  }

  // 2. Running sequences that are still prefilling (their blocks were reserved at admission).
  for (Sequence* s : running_) {
    if (budget <= 0) break;
    if (s->scheduled_step == step_ || s->num_pending() <= 0) continue;
    take(s, chunk(s));
  }

  // 3. Admissions from the waiting queue, smallest key first.
  const int64_t now = clock_ ? static_cast<int64_t>(clock_->now_ns()) : INT64_MIN;
  for (size_t i = 0;
       i < waiting_.size() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_num_seqs;) {
    Sequence* s = waiting_[i];
    auto drop = [&](std::vector<Sequence*>& into) {
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      s->state = Sequence::State::kFinished;
      into.push_back(s);
    };
    if (!blocks_.could_ever_allocate(s->tokens.size())) {
      drop(out.rejected);
      continue;
    }
    const int32_t need = admission_blocks(s->tokens.size());
    if (TenantAccount* t = s->tenant) {
      if (t->limits.max_kv_blocks > 0 && need > t->limits.max_kv_blocks) {
        drop(out.over_tenant_blocks);
        continue;
      }
      const bool at_limit = (t->limits.max_running > 0 && t->running >= t->limits.max_running) ||
                            (t->limits.max_kv_blocks > 0 && t->kv_blocks + need > t->limits.max_kv_blocks);
      if (at_limit) {  // waits for its own tenant's sequences, holding nobody else up
        ++i;
        continue;
      }
    }
    if (!blocks_.can_allocate(s->tokens, *s->ns, s->prefix)) {
      if (now >= s->wait_key_ns) break;  // due: nothing behind it is admitted until it is
      ++i;                               // not due yet: smaller requests behind it may go first
      continue;
    }
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    s->num_computed = blocks_.allocate(s->id, s->tokens, *s->ns, s->prefix, &out.copies);
    if (s->cached_prompt_tokens < 0) s->cached_prompt_tokens = std::min(s->num_computed, s->prompt_len);
    add_running(s);
    out.admitted.push_back(s);
    take(s, chunk(s));
  }
  if (config_.long_prefill_token_threshold > 0) yield_long_prefills(out);
  return out;
}

void Scheduler::yield_long_prefills(SchedulerStep& out) {
  // A prefill chunk that leaves more of its prompt for later steps (a long prompt, cut by the threshold) is
  // dropped from a step that completes another prefill (a short prompt, or a long one's last chunk), so that step
  // is as short as that prompt allows; but never from two steps in a row, so a long prompt advances at least every
  // second step however many short ones arrive.
  const bool completes_a_prefill = std::any_of(out.chunks.begin(), out.chunks.end(), [](const ScheduledChunk& c) {
    return c.num_tokens == c.seq->num_pending() && (c.seq->num_computed < c.seq->prompt_len || c.num_tokens > 1);
  });
  if (!completes_a_prefill) return;
  std::erase_if(out.chunks, [&](const ScheduledChunk& c) {
    const bool yielded_last_step = c.seq->yielded_step != 0 && c.seq->yielded_step + 1 == step_;
    if (c.num_tokens >= c.seq->num_pending() || yielded_last_step) return false;
    c.seq->yielded_step = step_;
    out.num_tokens -= c.num_tokens;
    return true;
  });
}
}  // namespace pagoda
