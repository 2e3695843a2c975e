#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>

#include "test_models.h"

namespace pagoda {
namespace {

const CacheNamespace kNs{"m", "", "", ""};

class SchedulerTest : public ::testing::Test {
 protected:

  Sequence* make_seq(int64_t id, int prompt_len, uint64_t arrival, int32_t priority = 0) {
    seqs_.push_back(std::make_unique<Sequence>(SeqId{id}, nullptr, 0, SamplingParams{}, stories260k().tokenizer(),
                                               std::vector<std::string>{}));
    Sequence* s = seqs_.back().get();
    for (int i = 0; i < prompt_len; ++i) s->tokens.push_back(10 + static_cast<int32_t>((id * 31 + i) % 400));
    s->prompt_len = prompt_len;
    s->arrival = arrival;
    s->priority = priority;
    s->ns = &kNs;
    return s;
  }
  // What the engine does after the forward: the chunk's tokens are computed; a finished prefill samples a token.
  void complete(BlockManager& bm, const SchedulerStep& step) {
    for (const auto& c : step.chunks) {
      c.seq->num_computed += c.num_tokens;
      bm.mark_computed(c.seq->id, c.seq->num_computed);
      if (c.seq->num_computed == static_cast<int64_t>(c.seq->tokens.size())) c.seq->tokens.push_back(42);
    }
  }

  ManualClock clock_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
};

TEST_F(SchedulerTest, ChunksPrefillToTheTokenBudgetAndRunsDecodesFirst) {
  BlockManager bm({64, 16, 0}, clock_);
  Scheduler sched({8, 32}, bm);
  Sequence* a = make_seq(1, 20, 1);
  Sequence* b = make_seq(2, 50, 2);
  sched.add_waiting(a);
  sched.add_waiting(b);
  SchedulerStep s1 = sched.schedule();
  ASSERT_EQ(s1.chunks.size(), 2u);
  EXPECT_EQ(s1.chunks[0].seq, a);
  EXPECT_EQ(s1.chunks[0].num_tokens, 20);
  EXPECT_EQ(s1.chunks[1].seq, b);
  EXPECT_EQ(s1.chunks[1].num_tokens, 12);  // budget 32 - 20
  complete(bm, s1);
  SchedulerStep s2 = sched.schedule();
  ASSERT_EQ(s2.chunks.size(), 2u);
  EXPECT_EQ(s2.chunks[0].seq, a);  // a decodes first
  EXPECT_EQ(s2.chunks[0].num_tokens, 1);
  EXPECT_EQ(s2.chunks[1].seq, b);
  EXPECT_EQ(s2.chunks[1].num_tokens, 31);
  EXPECT_EQ(s2.num_tokens, 32);
  EXPECT_TRUE(bm.check_invariants().ok());
}

TEST_F(SchedulerTest, MaxNumSeqsAndPriorityOrderAdmission) {
  BlockManager bm({64, 16, 0}, clock_);
  Scheduler sched({2, 2048}, bm);
  Sequence* low = make_seq(1, 4, 1, /*priority=*/5);
  Sequence* first = make_seq(2, 4, 2);
  Sequence* second = make_seq(3, 4, 3);
  sched.add_waiting(low);
  sched.add_waiting(second);
  sched.add_waiting(first);
  SchedulerStep s = sched.schedule();
  ASSERT_EQ(s.chunks.size(), 2u);
  EXPECT_EQ(s.chunks[0].seq, first);  // priority 0 before 5, then by arrival
  EXPECT_EQ(s.chunks[1].seq, second);
  EXPECT_EQ(sched.num_waiting(), 1);
}

TEST_F(SchedulerTest, PreemptsTheMostRecentlyAdmittedWhenBlocksRunOut) {
  // 4 blocks of 4 slots. Each 7-token prompt reserves 2 blocks (7 + 1 slots); the 9th token needs a third block.
  BlockManager bm({4, 4, 0}, clock_);
  Scheduler sched({8, 2048}, bm);
  Sequence* a = make_seq(1, 7, 1);
  Sequence* b = make_seq(2, 7, 2);
  sched.add_waiting(a);
  sched.add_waiting(b);
  complete(bm, sched.schedule());  // both prefilled; each sampled a token (8 tokens, 2 blocks)
  complete(bm, sched.schedule());  // both decode into their reserved slot (9 tokens now)
  SchedulerStep s = sched.schedule();  // a needs a third block: b (admitted later) is preempted
  EXPECT_EQ(s.num_preempted, 1);
  ASSERT_EQ(s.chunks.size(), 1u);
  EXPECT_EQ(s.chunks[0].seq, a);
  EXPECT_EQ(b->state, Sequence::State::kWaiting);
  EXPECT_EQ(b->num_computed, 0);
  EXPECT_EQ(sched.num_preemptions(), 1);
  EXPECT_TRUE(bm.check_invariants().ok());
  // When a finishes, b is admitted again: its first full block comes back from the prefix cache and the other
  // 5 of its 9 tokens are recomputed.
  sched.remove(a);
  SchedulerStep r = sched.schedule();
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].seq, b);
  EXPECT_EQ(b->num_computed, 4);
  EXPECT_EQ(r.chunks[0].num_tokens, 5);
  EXPECT_TRUE(bm.check_invariants().ok());
}

TEST_F(SchedulerTest, ASequenceAloneThatOutgrowsThePoolFinishes) {
  BlockManager bm({2, 4, 0}, clock_);
  Scheduler sched({8, 2048}, bm);
  Sequence* a = make_seq(1, 7, 1);
  sched.add_waiting(a);
  complete(bm, sched.schedule());
  complete(bm, sched.schedule());  // 9 tokens: 8 slots are all there is
  SchedulerStep s = sched.schedule();
  ASSERT_EQ(s.out_of_room.size(), 1u);
  EXPECT_EQ(s.out_of_room[0], a);
  EXPECT_EQ(bm.stats().used_blocks, 0);
  EXPECT_TRUE(bm.check_invariants().ok());
}

TEST_F(SchedulerTest, APromptThatCanNeverFitIsRejected) {
  BlockManager bm({2, 4, 0}, clock_);
  Scheduler sched({8, 2048}, bm);
  Sequence* big = make_seq(1, 8, 1);  // 8 + 1 slots > 8
  Sequence* ok = make_seq(2, 3, 2);
  sched.add_waiting(big);
  sched.add_waiting(ok);
  SchedulerStep s = sched.schedule();
  ASSERT_EQ(s.rejected.size(), 1u);
  EXPECT_EQ(s.rejected[0], big);
  ASSERT_EQ(s.chunks.size(), 1u);
  EXPECT_EQ(s.chunks[0].seq, ok);
}

}  // namespace
}  // namespace pagoda
