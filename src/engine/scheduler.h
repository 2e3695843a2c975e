// Continuous-batching scheduler. Every step it decides which sequences run and how many of their tokens:
//   1. running sequences that decode (one token each), in admission order; when the pool has no block for a
//      decode, the most recently admitted running sequence is preempted by recompute (its blocks are freed and
//      it returns to the waiting queue, to be prefilled again later);
//   2. running sequences still prefilling, chunked to the token budget;
//   3. waiting sequences, by (priority, arrival), admitted while the budget, --max-num-seqs and the pool allow;
//      admission reserves the blocks of the whole prompt plus one token of growth. The head of the queue blocks
//      the rest (first-come-first-served), except a sequence that can never fit, which is rejected.
// The per-step token budget (--max-num-batched-tokens) bounds the tokens of all three together.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sequence.h"
#include "kv/block_manager.h"

namespace pagoda {

struct SchedulerConfig {
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
};

struct ScheduledChunk {
  Sequence* seq;
  int32_t num_tokens;  // tokens seq->num_computed .. + num_tokens - 1 run this step
};

struct SchedulerStep {
  std::vector<ScheduledChunk> chunks;
  std::vector<BlockCopy> copies;       // copy-on-write copies to perform before the step's compute
  std::vector<Sequence*> rejected;     // can never fit the pool: finish with an error
  std::vector<Sequence*> out_of_room;  // alone in the pool and still cannot grow: finish with "length"
  int32_t num_preempted = 0;
  int32_t num_tokens = 0;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, BlockManager& blocks) : config_(config), blocks_(blocks) {}

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

 private:
  void preempt(Sequence* seq);
  void insert_waiting(Sequence* seq);

  SchedulerConfig config_;
  BlockManager& blocks_;
  std::vector<Sequence*> running_;  // admission order
  std::vector<Sequence*> waiting_;  // sorted by (priority, arrival, index)
  uint64_t step_ = 0;
  uint64_t admissions_ = 0;
  int64_t preemptions_ = 0;
};

}  // namespace pagoda
