// Continuous-batching scheduler. Every step it decides which sequences run and how many of their tokens:
//   1. running sequences that decode (one token each), in admission order; when the pool (or the sequence's
//      tenant's max_kv_blocks) has no block for a decode, the least urgent running sequence not yet scheduled this
//      step is preempted by recompute (its blocks are freed and it returns to the waiting queue with its place);
//   2. running sequences still prefilling, chunked to the token budget (and to long_prefill_token_threshold,
//      scaled down with the chunk's depth);
//   3. waiting sequences in order of their wait key, admitted while the budget, --max-num-seqs, the pool and their
//      tenant's limits allow; admission reserves the blocks of the whole prompt plus one token of growth.
// The per-step token budget (--max-num-batched-tokens) bounds the tokens of all three together. With a long-prefill
// threshold, a long prompt's cut chunk is left out of a step that completes a shorter prefill, though never from two
// steps in a row.
//
// Aging (docs/engine.md "Sharing between tenants"). A sequence's wait key is fixed when it first waits:
//   key = arrival + aging_horizon * (priority + min(1, prompt_tokens / aging_reference_tokens))
// so a short request may pass a long one that arrived less than its size penalty before it, and nothing that
// arrives later than a request's key passes it: every wait is bounded. The smallest key is served first. A
// sequence that does not fit the pool yet lets smaller keys behind it go (backfill) until its key is due
// (now >= key); from then on nothing behind it is admitted until it is. A sequence whose tenant is at a limit
// waits without holding anyone else up. Preemption takes the running sequence with the largest key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/sequence.h"
#include "engine/tenant_limits.h"
#include "kv/block_manager.h"
#include "util/clock.h"

namespace pagoda {

struct SchedulerConfig {
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  // A prefill chunk takes at most this many of a sequence's tokens per step at the start of its prompt, and fewer
  // deeper in, where each token attends to more keys: N * 512 / (512 + position) (0: up to the budget). So a long
  // prompt shares every step with short ones, and no step (the wait of a request that arrives during it) grows
  // with the depth of someone else's prompt.
  int32_t long_prefill_token_threshold = 0;
  int64_t aging_horizon_ns = int64_t{20} * 1000 * 1000 * 1000;  // a size penalty of 1 (and each priority step)
  int64_t aging_reference_tokens = 8192;                        // the prompt length whose penalty is 1
  TenantLimitsMap tenants = {};  // limits by tenant; kv_share is turned into blocks of the pool
};

// One configured tenant as the scheduler sees it (engine thread only). The holdings are recounted every step.
struct TenantAccount {
  std::string name;
  TenantLimits limits;  // max_kv_blocks already includes kv_share
  int32_t running = 0;    // running sequences
  int32_t kv_blocks = 0;  // block-table entries of its running sequences
};

struct ScheduledChunk {
  Sequence* seq;
  int32_t num_tokens;  // tokens seq->num_computed .. + num_tokens - 1 run this step
};

struct SchedulerStep {
  std::vector<ScheduledChunk> chunks;
  std::vector<BlockCopy> copies;       // copy-on-write copies to perform before the step's compute
  std::vector<Sequence*> rejected;     // can never fit the pool: finish with an error
  std::vector<Sequence*> over_tenant_blocks;  // needs more blocks than its tenant's max_kv_blocks: finish with an error
  std::vector<Sequence*> out_of_room;  // alone in the pool (or its tenant's blocks) and cannot grow: "length"
  std::vector<Sequence*> admitted;     // admitted this step (first admissions and re-admissions)
  int32_t num_preempted = 0;
  int32_t num_tokens = 0;
};

class Scheduler {
 public:
  // `clock` says when a waiting sequence's key is due; null: never (pure backfill, for tests that want it).
  Scheduler(const SchedulerConfig& config, BlockManager& blocks, Clock* clock = nullptr);

  // The account of a configured tenant; null for a tenant without limits (or none).
  TenantAccount* account(const std::string& tenant);
  const std::map<std::string, TenantAccount>& accounts() const { return accounts_; }

  // A new (or forked-but-not-admitted) sequence joins the waiting queue.
  void add_waiting(Sequence* seq);
  // A sequence forked from a running parent (blocks already shared by BlockManager::fork) joins the running set.
  void add_running(Sequence* seq);
  // Removes seq from whichever queue holds it and frees its blocks (finish, cancel, error).
  void remove(Sequence* seq);

  SchedulerStep schedule();

  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int64_t num_preemptions() const { return preemptions_; }
  // The most tokens one prefill chunk starting at `position` may take (long_prefill_token_threshold).
  int64_t prefill_chunk_limit(int64_t position) const;
  static constexpr int64_t kPrefillDepthReference = 512;  // the depth at which a chunk's limit is halved
  // The key a sequence would wait under (tests, docs): see the header comment.
  int64_t wait_key_for(const Sequence& seq, int64_t arrival_ns) const;

 private:
  void preempt(Sequence* seq);
  void insert_waiting(Sequence* seq);
  void recount_tenants();
  // Adds (+1) or takes away (-1) a running sequence and its block-table entries from its tenant's holdings.
  void count_tenant_hold(const Sequence* seq, int sign);
  // Blocks a new sequence of `tokens` tokens holds at admission (its prompt plus one token of growth).
  int32_t admission_blocks(size_t tokens) const;
  // The running sequence not yet scheduled this step with the largest key (of `only` tenant when not null).
  Sequence* least_urgent_unscheduled(const TenantAccount* only) const;
  // Drops the cut prefill chunks of long prompts from a step that completes a short prefill (not twice in a row).
  void yield_long_prefills(SchedulerStep& out);
  // Whether s's next token needs a block its tenant cannot hold.
  bool tenant_blocks_full(const Sequence* s) const;

  SchedulerConfig config_;
  BlockManager& blocks_;
  Clock* clock_;
  std::map<std::string, TenantAccount> accounts_;
  std::vector<Sequence*> running_;  // admission order
  std::vector<Sequence*> waiting_;  // sorted by (wait key, arrival, index)
  uint64_t step_ = 0;
  uint64_t admissions_ = 0;
  int64_t preemptions_ = 0;
};

}  // namespace pagoda
