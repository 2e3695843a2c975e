#include "engine/scheduler.h"

#include <algorithm>
#include <cassert>

namespace pagoda {

namespace {
bool waits_before(const Sequence* a, const Sequence* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  if (a->arrival != b->arrival) return a->arrival < b->arrival;
  return a->index < b->index;
}
}  // namespace

void Scheduler::insert_waiting(Sequence* seq) {
  seq->state = Sequence::State::kWaiting;
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), seq, waits_before), seq);
}

void Scheduler::add_waiting(Sequence* seq) { insert_waiting(seq); }

void Scheduler::add_running(Sequence* seq) {
  seq->state = Sequence::State::kRunning;
  seq->admitted = ++admissions_;
  running_.push_back(seq);
}

void Scheduler::remove(Sequence* seq) {
  if (auto it = std::find(running_.begin(), running_.end(), seq); it != running_.end()) {
    running_.erase(it);
    blocks_.free(seq->id);
  } else if (auto w = std::find(waiting_.begin(), waiting_.end(), seq); w != waiting_.end()) {
    waiting_.erase(w);
  }
  seq->state = Sequence::State::kFinished;
}

void Scheduler::preempt(Sequence* seq) {
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  blocks_.free(seq->id);
  seq->num_computed = 0;
  ++preemptions_;
  insert_waiting(seq);
}

SchedulerStep Scheduler::schedule() {
  SchedulerStep out;
  ++step_;
  int64_t budget = config_.max_num_batched_tokens;
  auto take = [&](Sequence* s, int64_t n) {
    s->scheduled_step = step_;
    out.chunks.push_back({s, static_cast<int32_t>(n)});
    out.num_tokens += static_cast<int32_t>(n);
    budget -= n;
  };

  // 1. Decodes of running sequences, oldest admission first.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence* s = running_[i];
    if (blocks_.num_tokens(s->id) == static_cast<int64_t>(s->tokens.size())) {
      ++i;  // still prefilling: step 2
      continue;
    }
    bool self_preempted = false;
    while (!blocks_.can_append(s->id)) {
      // The most recently admitted running sequence not yet scheduled this step gives its blocks back.
      Sequence* victim = nullptr;
      for (auto it = running_.rbegin(); it != running_.rend(); ++it)
        if ((*it)->scheduled_step != step_) {
          victim = *it;
          break;
        }
      if (victim == s && running_.size() == 1) {
        // Nothing else holds blocks: the pool cannot hold this sequence any longer.
        running_.erase(running_.begin() + i);
        blocks_.free(s->id);
        s->state = Sequence::State::kFinished;
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
    blocks_.append_slot(s->id, s->tokens.back(), &copy);
    if (copy) out.copies.push_back(*copy);
    take(s, 1);
    ++i;
  }

  // 2. Running sequences that are still prefilling (their blocks were reserved at admission).
  for (Sequence* s : running_) {
    if (budget <= 0) break;
    if (s->scheduled_step == step_ || s->num_pending() <= 0) continue;
    take(s, std::min<int64_t>(s->num_pending(), budget));
  }

  // 3. Admissions from the waiting queue.
  while (budget > 0 && !waiting_.empty() && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    Sequence* s = waiting_.front();
    if (!blocks_.could_ever_allocate(s->tokens.size())) {
      waiting_.erase(waiting_.begin());
      s->state = Sequence::State::kFinished;
      out.rejected.push_back(s);
      continue;
    }
    if (!blocks_.can_allocate(s->tokens, *s->ns, s->prefix)) break;
    waiting_.erase(waiting_.begin());
    s->num_computed = blocks_.allocate(s->id, s->tokens, *s->ns, s->prefix, &out.copies);
    if (s->cached_prompt_tokens < 0) s->cached_prompt_tokens = std::min(s->num_computed, s->prompt_len);
    add_running(s);
    take(s, std::min<int64_t>(s->num_pending(), budget));
  }
  return out;
}

}  // namespace pagoda
