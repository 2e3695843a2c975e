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

TEST_F(SchedulerTest, WaitKeyChargesSizeAndPriorityInHorizons) {
  BlockManager bm({64, 16, 0}, clock_);
  SchedulerConfig c;
  c.aging_horizon_ns = 1000;
  c.aging_reference_tokens = 100;
  Scheduler sched(c, bm, &clock_);
  Sequence* s = make_seq(1, 50, 1);
  EXPECT_EQ(sched.wait_key_for(*s, 7), 7 + 500);  // half the reference length: half a horizon
  Sequence* long_one = make_seq(2, 400, 2);
  EXPECT_EQ(sched.wait_key_for(*long_one, 7), 7 + 1000);  // capped at one horizon
  Sequence* low = make_seq(3, 50, 3, /*priority=*/2);
  EXPECT_EQ(sched.wait_key_for(*low, 7), 7 + 2000 + 500);
}

// A long prompt that does not fit yet lets a short one behind it go first while its key is not due; once it is
// due, nothing behind it is admitted until it is.
TEST_F(SchedulerTest, ANotDueSequenceIsPassedAndADueOneHoldsThePool) {
  BlockManager bm({8, 4, 0}, clock_);  // 32 slots
  SchedulerConfig c;
  c.aging_horizon_ns = 1000;
  c.aging_reference_tokens = 32;
  Scheduler sched(c, bm, &clock_);
  Sequence* running = make_seq(1, 15, 1);  // 4 blocks
  sched.add_waiting(running);
  complete(bm, sched.schedule());
  Sequence* big = make_seq(2, 19, 2);  // 5 blocks: does not fit next to `running`; key = 0 + 593
  sched.add_waiting(big);
  clock_.advance(550);
  Sequence* small1 = make_seq(3, 3, 3);  // 1 block; key = 550 + 93, behind big's
  sched.add_waiting(small1);
  EXPECT_GT(small1->wait_key_ns, big->wait_key_ns);
  SchedulerStep s1 = sched.schedule();
  ASSERT_EQ(s1.admitted.size(), 1u);
  EXPECT_EQ(s1.admitted[0], small1);  // big is not due yet: small1 goes past it
  EXPECT_EQ(big->state, Sequence::State::kWaiting);
  complete(bm, s1);
  clock_.advance(50);  // 600: big is due now
  Sequence* small2 = make_seq(4, 3, 4);
  sched.add_waiting(small2);
  SchedulerStep s2 = sched.schedule();
  EXPECT_TRUE(s2.admitted.empty());  // big is due and heads the queue: the two small ones wait behind it
  sched.remove(small1);
  sched.remove(running);
  SchedulerStep s3 = sched.schedule();
  ASSERT_GE(s3.admitted.size(), 1u);
  EXPECT_EQ(s3.admitted[0], big);
  EXPECT_TRUE(bm.check_invariants().ok());
}

TEST_F(SchedulerTest, ATenantAtMaxRunningWaitsWithoutHoldingOthersUp) {
  BlockManager bm({64, 16, 0}, clock_);
  SchedulerConfig c;
  c.tenants["a"].max_running = 1;
  Scheduler sched(c, bm, &clock_);
  const CacheNamespace ns_a{"m", "a", "", ""}, ns_b{"m", "b", "", ""};
  Sequence* a1 = make_seq(1, 4, 1);
  Sequence* a2 = make_seq(2, 4, 2);
  Sequence* b1 = make_seq(3, 4, 3);
  a1->ns = a2->ns = &ns_a;
  b1->ns = &ns_b;
  a1->tenant = a2->tenant = sched.account("a");
  ASSERT_NE(a1->tenant, nullptr);
  EXPECT_EQ(sched.account("b"), nullptr);  // no limits: not tracked
  for (Sequence* s : {a1, a2, b1}) sched.add_waiting(s);
  SchedulerStep s1 = sched.schedule();
  ASSERT_EQ(s1.admitted.size(), 2u);
  EXPECT_EQ(s1.admitted[0], a1);
  EXPECT_EQ(s1.admitted[1], b1);  // a2 waits for a1; b1 goes past it
  EXPECT_EQ(a2->state, Sequence::State::kWaiting);
  EXPECT_EQ(sched.account("a")->running, 1);
  complete(bm, s1);
  sched.remove(a1);
  SchedulerStep s2 = sched.schedule();
  ASSERT_EQ(s2.admitted.size(), 1u);
  EXPECT_EQ(s2.admitted[0], a2);
}

TEST_F(SchedulerTest, ATenantsKvBlocksBoundItsAdmissionsAndItsGrowth) {
  BlockManager bm({64, 4, 0}, clock_);
  SchedulerConfig c;
  c.tenants["a"].max_kv_blocks = 4;
  Scheduler sched(c, bm, &clock_);
  const CacheNamespace ns_a{"m", "a", "", ""};
  Sequence* a1 = make_seq(1, 7, 1);   // 2 blocks (7 + 1 slots)
  Sequence* a2 = make_seq(2, 7, 2);   // 2 blocks
  Sequence* a3 = make_seq(3, 7, 3);   // 2 more: over 4 while a1 and a2 run
  Sequence* huge = make_seq(4, 20, 4);  // 6 blocks: more than the tenant may ever hold
  for (Sequence* s : {a1, a2, a3, huge}) {
    s->ns = &ns_a;
    s->tenant = sched.account("a");
    sched.add_waiting(s);
  }
  SchedulerStep s1 = sched.schedule();
  ASSERT_EQ(s1.admitted.size(), 2u);
  ASSERT_EQ(s1.over_tenant_blocks.size(), 1u);
  EXPECT_EQ(s1.over_tenant_blocks[0], huge);
  EXPECT_EQ(a3->state, Sequence::State::kWaiting);
  EXPECT_EQ(sched.account("a")->kv_blocks, 4);
  complete(bm, s1);                // 8 tokens each, 2 blocks each
  complete(bm, sched.schedule());  // 9 tokens each: the next decode needs a third block
  SchedulerStep s3 = sched.schedule();
  // The pool has room, the tenant does not: its least urgent sequence (a2) gives its blocks back to a1.
  EXPECT_EQ(s3.num_preempted, 1);
  EXPECT_EQ(a2->state, Sequence::State::kWaiting);
  EXPECT_EQ(a1->state, Sequence::State::kRunning);
  EXPECT_LE(sched.account("a")->kv_blocks, 4);
  EXPECT_TRUE(bm.check_invariants().ok());
}

TEST_F(SchedulerTest, PreemptionTakesTheLargestWaitKey) {
  BlockManager bm({4, 4, 0}, clock_);
  Scheduler sched({8, 2048}, bm, &clock_);
  Sequence* a = make_seq(1, 7, 1);
  Sequence* b = make_seq(2, 7, 2);
  a->has_wait_key = true;  // a arrived first but is the less urgent (a larger key, e.g. a lower priority)
  a->wait_key_ns = 50;
  b->has_wait_key = true;
  b->wait_key_ns = 10;
  sched.add_waiting(a);
  sched.add_waiting(b);
  complete(bm, sched.schedule());
  complete(bm, sched.schedule());
  SchedulerStep s = sched.schedule();  // b is admitted first (smaller key) and decodes first; a is the victim
  EXPECT_EQ(s.num_preempted, 1);
  EXPECT_EQ(a->state, Sequence::State::kWaiting);
  EXPECT_EQ(b->state, Sequence::State::kRunning);
}

TEST_F(SchedulerTest, LongPrefillThresholdCutsLongPromptsByDepthAndTheyYieldToUrgentPrefills) {
  BlockManager bm({64, 16, 0}, clock_);
  SchedulerConfig c;
  c.max_num_batched_tokens = 100;
  c.long_prefill_token_threshold = 8;
  Scheduler sched(c, bm, &clock_);
  EXPECT_EQ(sched.prefill_chunk_limit(0), 8);
  EXPECT_EQ(sched.prefill_chunk_limit(512), 4);      // halved at depth 512
  EXPECT_EQ(sched.prefill_chunk_limit(1 << 20), 1);  // never zero
  Sequence* a = make_seq(1, 30, 1);
  Sequence* b = make_seq(2, 5, 2);
  sched.add_waiting(a);
  sched.add_waiting(b);
  // b's whole prompt runs; a's first chunk would be cut, so it leaves b's step to b.
  SchedulerStep s1 = sched.schedule();
  ASSERT_EQ(s1.chunks.size(), 1u);
  EXPECT_EQ(s1.chunks[0].seq, b);
  EXPECT_EQ(s1.chunks[0].num_tokens, 5);
  EXPECT_EQ(s1.num_tokens, 5);
  EXPECT_EQ(a->state, Sequence::State::kRunning);  // admitted all the same: its blocks are reserved
  complete(bm, s1);
  Sequence* c2 = make_seq(3, 4, 3);  // another short prompt: a yielded last step, so it runs beside it now
  sched.add_waiting(c2);
  SchedulerStep s2 = sched.schedule();
  ASSERT_EQ(s2.chunks.size(), 3u);
  EXPECT_EQ(s2.chunks[0].seq, b);  // decode
  EXPECT_EQ(s2.chunks[1].seq, a);  // its first chunk: 8 tokens at position 0
  EXPECT_EQ(s2.chunks[1].num_tokens, 8);
  EXPECT_EQ(s2.chunks[2].seq, c2);
  complete(bm, s2);
  SchedulerStep s3 = sched.schedule();  // decodes only besides a: at position 8, 8 * 512 / 520 -> 7 tokens
  ASSERT_EQ(s3.chunks.size(), 3u);  // the decodes of b and c2 first, then a's chunk
  EXPECT_EQ(s3.chunks[2].seq, a);
  EXPECT_EQ(s3.chunks[2].num_tokens, 7);
}

}  // namespace
}  // namespace pagoda
