// MaskPrefetcher: the grammar masks a step will sample with, computed on a thread of its own while the step's
// forward pass runs.
//
// A constrained sequence's next mask depends only on its grammar state, which is known once its last token was
// sampled, before the forward pass that produces the next logits. The engine hands the states whose masks are not
// cached yet to this thread before the forward pass and waits for it after; the masks land in each grammar's mask
// cache (token_mask.h), where sampling finds them. Nothing else changes: the same masks, the same tokens; only
// when a grammar state is met for the first time, its trie walk overlaps the forward pass instead of following it.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace pagoda {

class MaskPrefetcher {
 public:
  struct Job {
    std::shared_ptr<const grammar::CompiledGrammar> grammar;
    grammar::MatcherState state;
  };

  MaskPrefetcher();
  ~MaskPrefetcher();
  MaskPrefetcher(const MaskPrefetcher&) = delete;
  MaskPrefetcher& operator=(const MaskPrefetcher&) = delete;

  // Starts computing the jobs' masks and returns at once; the previous batch must have been waited for.
  void start(std::vector<Job> jobs);
  // Returns when every job of the last start() is done (at once when there were none).
  void wait();
  uint64_t masks_computed() const;

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job> jobs_;  // guarded by mu_
  bool busy_ = false;      // a batch is started and not finished
  bool stop_ = false;
  uint64_t computed_ = 0;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace pagoda
