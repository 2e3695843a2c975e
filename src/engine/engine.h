// The serving engine: a paged KV pool, the block manager, the continuous-batching scheduler and the model,
// stepped on its own thread. Callers submit requests from any thread and read each request's stream.
//
// One step: take new requests and cancellations -> schedule -> copy-on-write copies -> one forward over every
// scheduled token of every sequence (the matmuls see all tokens together; attention runs per sequence through
// the paged kernel) -> sample the sequences whose last pending token was computed -> stop checks -> emit.
// The forward's arithmetic per token is independent of the batch, so a request's tokens and logits are bitwise
// the same as when it runs alone through SequenceRunner, whatever else runs, however its prefill is chunked,
// and after any number of preemptions.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <unordered_map>
#include <list>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/anchor_recheck.h"
#include "engine/mask_prefetcher.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/tenant_ledger.h"
#include "engine/tenant_limits.h"
#include "kv/block_manager.h"
#include "kv/kv_pool.h"
#include "model/device_forward.h"
#include "model/transformer.h"
#include "model/model.h"
#include "util/clock.h"
#include "util/rng.h"
#include "util/thread_pool.h"
#include "warmstart/warm_start_service.h"
#include "warmstart/warm_start_worker.h"

namespace pagoda {

struct EngineConfig {
  int32_t block_size = 16;
  int64_t num_blocks = 0;       // > 0: exactly this many blocks
  uint64_t kv_cache_bytes = 0;  // with num_blocks 0: blocks that fit this budget (0: kDefaultKvCacheBytes)
  KvDtype kv_cache_dtype = kDefaultKvDtype;  // the K/V element type (kv/kv_dtype.h)
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t long_prefill_token_threshold = 0;  // a prefill chunk's most tokens per step (0: up to the budget)
  double aging_horizon_s = 20;  // the wait a full-length prompt (or one priority step) costs (engine/scheduler.h)
  TenantLimitsMap tenants;      // per-tenant limits (engine/tenant_limits.h); empty: none
  int64_t max_model_len = 0;      // tokens per sequence, prompt included (0: the model's training context)
  int32_t watermark_blocks = -1;  // -1: 1% of the pool
  int num_threads = 0;            // 0: ThreadPool::default_num_threads()
  uint64_t seed = 0;              // seeds the requests that bring none
  std::string model_id;           // prefix-cache namespace of these weights
  AttentionImpl attention = AttentionImpl::kFused;
  // Where the forward pass and the KV pool live (model/device_forward.h). On cuda the anchor, warm-start and
  // attention-probe paths, which read K/V on the host, are refused.
  Device device = Device::kCpu;
  bool enable_prefix_caching = true;
  bool prefault_kv = false;  // make the whole KV pool resident at creation (servers: flat memory while serving)
  double anchor_max_pinned_frac = 0.25;  // pinned anchor blocks may take at most this share of the pool
  // The instrumented attention path (off by default): for requests that start from an anchor, measure each query's
  // attention mass on the anchor's keys per layer and head (Engine::anchor_attention). Costs one more pass over
  // the keys per layer; never changes a token or a logit.
  bool probe_anchor_attention = false;
  // Benchmark only (engine/anchor_recheck.h): re-verify anchors and re-hash their K/V blocks on the token path at a
  // chosen cadence. The default, session, does nothing after registration.
  AnchorRecheck anchor_recheck;
  Clock* clock = nullptr;  // LRU clock; nullptr: a steady clock
  // Grammar masks not cached yet are computed on a thread of their own during the forward pass
  // (engine/mask_prefetcher.h) instead of after it. Off: computed when sampling. Either way the same tokens.
  bool parallel_masks = true;
  // Warm start (off when null, src/warmstart/warm_start_service.h): an eligible request's first token from a
  // projected summary of a similar earlier prompt, emitted at admission; tokens 2.. from the exact prefill.
  // Eligible: one choice, no grammar, no logprobs, no anchor, no forced first token.
  std::shared_ptr<warmstart::WarmStartService> warm_start;
  // KV-cache events for routers (off when empty, kv/kv_cache_events.h): called on the engine thread after each step
  // with what the prefix cache stored and dropped in it (the first call starts with "cleared"). It must not block
  // (server/kv_events_publisher.h queues and publishes on a thread of its own).
  std::function<void(std::vector<KvCacheEvent>&&)> kv_events;
};

constexpr uint64_t kDefaultKvCacheBytes = uint64_t{1} << 30;

// An anchor's K/V as the engine holds it: a pinned sequence of the block manager, prefilled once.
struct AnchorActivation {
  int32_t tokens = 0;
  int32_t blocks = 0;        // pinned blocks (the last one may be partial)
  double prefill_seconds = 0;  // 0 when it was already active
};

// How the engine serves an anchor's K/V; the default is the anchor visible to every layer like any prefix.
struct AnchorServing {
  // [n_layer] 1 where the anchor's keys are visible to the layer, 0 where that layer's attention skips them (the
  // seed's "visible to selected layers" variant, for the anchor benchmark). Empty: every layer. Requests' own
  // blocks computed under a mask are cached apart from those computed without it.
  std::vector<uint8_t> visible_layers;
};

// What the instrumented attention path measured for one anchor: the mean share of attention on its keys.
struct AnchorAttention {
  int32_t n_layer = 0, n_head = 0;
  int64_t prompt_queries = 0;     // prompt tokens (after the anchor) measured; recomputed ones count again
  int64_t generated_queries = 0;  // generated tokens measured (each as the query of the step that feeds it back)
  std::vector<double> prompt_mass;     // [n_layer, n_head] mean mass on the anchor's keys over prompt queries
  std::vector<double> generated_mass;  // [n_layer, n_head] the same over generated-token queries
  // By distance from the anchor: a query at position p (the anchor is [0, A)) has distance d = p - A + 1, in bucket
  // floor(log2(d)) (bucket b holds distances [2^b, 2^(b+1))). Prompt and generated queries together.
  std::vector<int64_t> distance_queries;  // [n_buckets] queries measured per bucket
  std::vector<double> distance_mass;      // [n_buckets, n_layer, n_head] mean mass on the anchor's keys
};

// When a revocation took effect, measured in engine steps (Engine::anchor_revocation). Step k is the k-th step
// the engine ran (0-based); a revocation that arrives while step k runs is applied at the start of step k + 1.
struct AnchorRevocationReport {
  int64_t arrival_step = 0;   // the step running when the revocation was queued (or the next one, when idle)
  int64_t applied_step = 0;   // the step whose start applied it
  int64_t last_attended_step = -1;  // the last step whose forward included a sequence using the anchor; -1: none
  double arrival_to_last_attended_end_s = 0;  // from arrival until that step's forward ended (0 if before arrival)
  // Steps after the arrival step that still attended to the anchor: 0 is the goal (at most the current one).
  int64_t steps_after_arrival() const { return std::max<int64_t>(0, last_attended_step - arrival_step); }
};

struct EngineStats {
  BlockManagerStats blocks;
  int32_t block_size = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int32_t running = 0;
  int32_t waiting = 0;  // sequences waiting for admission, plus requests submitted since the last step
  int32_t peak_used_blocks = 0;
  int32_t peak_seq_slack_slots = 0;    // the most unused tail slots any sequence held at the end of a step
  int64_t prompt_tokens_computed = 0;  // prefill tokens actually run (prefix hits and recomputes excluded/included)
  int64_t generated_tokens = 0;
  int64_t requests_finished = 0;
  int64_t anchor_rechecks = 0;          // re-checks run by the benchmark-only cadence (EngineConfig::anchor_recheck)
  double anchor_recheck_seconds = 0;    // time they took, on the engine thread
  warmstart::WarmStartStats warm_start;  // hits, misses and time (all zero when warm start is off)
  int64_t warm_start_pending = 0;  // decisions running on the warm-start worker
  int64_t masks_prefetched = 0;  // grammar masks computed during a forward pass (EngineConfig::parallel_masks)
};

struct RequestState {
  GenerationRequest request;
  std::shared_ptr<RequestStream> stream;
  CacheNamespace ns;
  uint64_t arrival = 0;
  uint64_t base_seed = 0;
  bool forked = false;
  bool done = false;  // every choice finished
  TenantLedger::Entry* tenant = nullptr;  // the tenant's ledger entry (configured tenants only)
  bool counted_waiting = false;           // counted in tenant->waiting until first admitted or finished
  int32_t open = 0;   // choices not finished
  int32_t choice_offset = 0;  // added to every event's index: this request's choices within a shared stream
  std::string anchor;         // digest of the pinned anchor its sequences start from; empty: none
  int32_t anchor_len = 0;     // that anchor's tokens (the start of every sequence's tokens)
  std::shared_ptr<const std::vector<uint8_t>> anchor_hidden_layers;  // [n_layer] 1: hidden there; null: none
  std::vector<std::unique_ptr<Sequence>> seqs;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const Model& model, const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. The request is validated on the engine side; a bad one gets a stream holding one error event.
  std::shared_ptr<RequestStream> submit(GenerationRequest request);
  // Thread-safe. Several requests answered on one stream (the prompts of one OpenAI completion request): the
  // choices of requests[i] have indices offset by the n of the requests before it. Cancelling the stream cancels
  // them all. The stream's prompt_ids() are the first request's.
  std::shared_ptr<RequestStream> submit_group(std::vector<GenerationRequest> requests);
  // Thread-safe. As submit_group, unless the requests' tenant already has its max_waiting requests waiting: then
  // nothing is submitted and the answer is an error with code "tenant_queue_full" (the server's 429).
  Result<std::shared_ptr<RequestStream>> try_submit_group(std::vector<GenerationRequest> requests);
  // Thread-safe: every configured tenant's limits, waiting requests, running sequences and KV blocks.
  std::vector<TenantLedger::Row> tenant_usage() const { return ledger_.rows(); }
  // Thread-safe: a configured tenant's limits (kv_share already in max_kv_blocks); nullopt: none.
  std::optional<TenantLimits> tenant_limits(const std::string& tenant) const {
    const TenantLedger::Entry* e = ledger_.find(tenant);
    return e ? std::optional<TenantLimits>(e->limits) : std::nullopt;
  }

  // --- verified anchors (the engine knows digests and tokens only; verification happens before, in src/anchor).
  // Thread-safe. At its next step the engine prefills `tokens` once into pinned blocks held under `digest` (again
  // for a digest already active: nothing, and the same answer). Errors: code "anchor_pool_full" when pinned
  // anchors would exceed anchor_max_pinned_frac of the pool, or the pool has no room now.
  // `serving` (off by default) hides the anchor from chosen layers; activating an active digest with another
  // layer mask is an error (code "anchor_conflict").
  std::future<Result<AnchorActivation>> activate_anchor(std::string digest, std::vector<int32_t> tokens,
                                                        AnchorServing serving = {});
  // Thread-safe; both take effect at the next step boundary. Deactivation takes no new requests and unpins the
  // blocks once the requests using them have finished. Revocation also ends those requests now, with
  // FinishReason::kAnchorRevoked, so no later step attends to the anchor.
  void deactivate_anchor(const std::string& digest);
  void revoke_anchor(const std::string& digest);
  // Thread-safe. With EngineConfig::probe_anchor_attention: what has been measured for the anchor so far (kept
  // after it is unpinned); nullopt when nothing was.
  std::optional<AnchorAttention> anchor_attention(const std::string& digest) const;
  // Thread-safe. For a revoked anchor: when the revocation took effect (kept after the anchor is unpinned).
  std::optional<AnchorRevocationReport> anchor_revocation(const std::string& digest) const;

  // Runs steps on a background thread until stop() (or destruction).
  void start();
  void stop();

  // Manual driving, for tests and offline tools (not while the background thread runs): one step; false when
  // there was nothing to do.
  bool step();
  void run_until_idle();

  EngineStats stats() const;  // thread-safe snapshot, refreshed after every step
  // The block manager's structural invariants (tests; engine thread or stopped engine only).
  Status check_invariants() const { return blocks_->check_invariants(); }
  const KvPoolShape& pool_shape() const { return kv_->shape(); }
  const EngineConfig& config() const { return config_; }
  std::string describe() const;  // the start-up report

 private:
  Engine(const Model& model, const EngineConfig& config, std::unique_ptr<KvPool> kv,
         std::unique_ptr<DeviceForward> device);

  void wake();
  void take_inbox();
  void admit_request(std::unique_ptr<RequestState> rs);
  void process_cancellations();
  // Ends every unfinished sequence of the step with an error (a block copy or the forward pass failed).
  void fail_step(const SchedulerStep& sched, const std::string& message);
  void run_batch(const SchedulerStep& sched);
  void sample_and_emit(Sequence& s, std::span<const float> logits);
  // Appends `token` to the sequence and emits it (stop checks, grammar, length); `logits` are the ones behind it.
  void emit_token(Sequence& s, int32_t token, std::span<const float> logits, StreamEvent ev = {});
  // Warm start runs on its worker thread: eligible requests wait in warm_pending_ (not in the scheduler) until
  // their decision is taken at the start of a step; nothing else waits for it.
  bool warm_start_eligible(const Sequence& s) const;
  void collect_warm_starts();
  void apply_warm_start(Sequence& s, Result<warmstart::WarmStartDecision> decision);
  void wait_for_wake();  // blocks until wake() or stop()
  void fork_choices(Sequence& parent);
  void finish(Sequence& s, FinishReason reason, const std::string& error = {});
  void fail_request(std::unique_ptr<RequestState> rs, const std::string& error);
  // Counts a request out of its tenant's waiting requests (once; admission or finish).
  static void leave_waiting(RequestState& rs);
  std::shared_ptr<RequestStream> submit_states(std::vector<GenerationRequest> requests, bool enforce_max_waiting);
  // Every event of a request goes out through here: the choice index is shifted into the shared stream.
  static void push_event(RequestState& rs, StreamEvent event);
  // Ends every open choice of rs (those not forked yet included).
  void finish_request(RequestState& rs, FinishReason reason, const std::string& error);
  void finish_all(FinishReason reason, const std::string& error);
  void release_finished_requests();
  void refresh_stats();
  bool has_work() const;
  KvStorage kv_storage() const;
  // One forward over the batch the b_* buffers describe (b_table_ holds max_blocks entries per sequence).
  Status forward_batch_buffers(int32_t max_blocks);
  // Anchors (engine_anchors.cpp).
  struct PinnedAnchor {
    SeqId seq;
    std::vector<int32_t> tokens;
    std::shared_ptr<const std::vector<uint8_t>> hidden_layers;  // [n_layer] 1: hidden from that layer; null: none
    std::string cache_scope;  // the requests' prefix-cache namespace: the digest, plus the mask when there is one
    int32_t blocks = 0;
    int64_t users = 0;       // requests admitted with it and not yet released
    bool accepting = true;   // false once deactivated or revoked: freed when users reach 0
    Sha256Digest kv_digest{};          // of its K/V bytes after the prefill (for the benchmark's re-checks)
    int64_t last_attended_step = -1;   // the last step whose forward included a sequence using it
    int64_t last_attended_end_ns = 0;  // when that forward ended (steady clock)
  };
  struct AnchorCommand {
    enum class Kind { kActivate, kDeactivate, kRevoke };
    Kind kind = Kind::kActivate;
    std::string digest;
    std::vector<int32_t> tokens;
    AnchorServing serving;
    std::shared_ptr<std::promise<Result<AnchorActivation>>> done;
    int64_t arrival_step = 0;  // steps completed when it was queued: the index of the step running then
    int64_t arrival_ns = 0;    // steady clock
  };
  void push_anchor_command(AnchorCommand command);
  void process_anchor_commands();
  Result<AnchorActivation> pin_anchor(const std::string& digest, const std::vector<int32_t>& tokens,
                                      const AnchorServing& serving);
  // The step's per-sequence layer mask and probe inputs (b_hidden_*, b_probe_prefix_), empty when unused.
  void build_anchor_seams(const SchedulerStep& sched);
  // Adds the probe's masses of this step (before num_computed moves) to anchor_attention_.
  void accumulate_anchor_attention(const SchedulerStep& sched);
  // Admission of a request naming an anchor: the anchor's tokens, its sequence, or an error.
  Result<const PinnedAnchor*> anchor_for(const std::string& digest) const;
  void release_anchor_user(const std::string& digest);
  void unpin_unused_anchors();
  // Keeps when a revocation arrived and which steps still attended to the anchor (anchor_revocation).
  void record_revocation(const AnchorCommand& c);
  // The benchmark-only re-check of one anchor (signature callback + K/V hash); counts it and its time.
  Status recheck_anchor(const std::string& digest);
  // After a forward: the anchors the step's sequences attended to (revocation reports), and the per-token
  // re-checks of the block/token cadences (sequences that fail them finish with an error).
  void after_anchor_forward(const SchedulerStep& sched);
  // Starts computing, during the forward pass, the masks this step's constrained sequences will sample with that
  // no grammar's cache holds yet (config.parallel_masks).
  void prefetch_masks();

  const Model& model_;
  EngineConfig config_;
  std::unique_ptr<DeviceForward> device_;  // null: the CPU forward pass (declared before kv_: outlives its memory)
  std::unique_ptr<KvPool> kv_;
  std::unique_ptr<SteadyClock> own_clock_;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> scheduler_;
  TenantLedger ledger_;
  std::unique_ptr<ThreadPool> pool_;
  TransformerWorkspace ws_;
  std::vector<float> logits_;
  std::vector<float> masked_logits_;  // [n_vocab] a constrained sequence's logits with disallowed tokens at -inf
  std::unique_ptr<MaskPrefetcher> mask_prefetcher_;  // null: masks computed when sampling (config.parallel_masks)
  Rng seed_rng_;
  int64_t max_model_len_ = 0;
  int64_t next_seq_id_ = 1;
  uint64_t next_arrival_ = 1;
  std::list<std::unique_ptr<RequestState>> active_;
  std::unordered_map<std::string, PinnedAnchor> anchors_;  // by digest (engine thread only)
  int32_t pinned_anchor_blocks_ = 0;

  // Step counters (engine thread only); published through stats_.
  int64_t steps_ = 0;
  int32_t peak_used_blocks_ = 0;
  int32_t peak_seq_slack_ = 0;
  int64_t prompt_tokens_computed_ = 0;
  int64_t generated_tokens_ = 0;
  int64_t requests_finished_ = 0;
  int64_t anchor_rechecks_ = 0;
  double anchor_recheck_seconds_ = 0;
  std::atomic<int64_t> steps_started_{0};  // steps_ as other threads may read it (revocation arrival)

  // Batch buffers, reused every step.
  std::vector<int32_t> b_tokens_, b_positions_, b_cu_, b_kv_lens_, b_table_, b_logit_rows_;
  std::vector<int64_t> b_slots_;
  std::vector<int32_t> b_hidden_prefix_, b_probe_prefix_;  // [num_seqs] (layer mask, probe); empty: off
  std::vector<uint8_t> b_hidden_layers_;                   // [num_seqs, n_layer]
  std::vector<float> b_probe_mass_;                        // [n_layer, num_tokens, n_heads]
  std::vector<Sequence*> b_logit_seqs_;

  mutable std::mutex mu_;  // guards inbox_, wake_pending_, stop_, stats_
  std::condition_variable cv_;
  std::deque<std::unique_ptr<RequestState>> inbox_;
  std::deque<AnchorCommand> anchor_inbox_;
  // Bumped after every anchor command is queued: a step reads it once (no lock) and takes the queue only when it
  // moved, so anchor checks cost one atomic load per step and nothing per token.
  std::atomic<uint64_t> anchor_epoch_{0};
  uint64_t anchor_epoch_seen_ = 0;  // engine thread only
  bool wake_pending_ = false;
  bool stop_ = false;
  EngineStats stats_;
  std::unordered_map<std::string, AnchorAttention> anchor_attention_;  // sums until read (guarded by mu_)
  std::unordered_map<std::string, AnchorRevocationReport> revocations_;  // by digest (guarded by mu_)
  std::thread thread_;
  std::unordered_map<int64_t, Sequence*> warm_pending_;  // by sequence id: decisions not taken yet (engine thread)
  std::unique_ptr<warmstart::WarmStartWorker> warm_worker_;  // last: stopped before anything it wakes goes away
};

}  // namespace pagoda
