#include "engine/engine.h"

#include <algorithm>
#include <limits>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <exception>

namespace pagoda {

namespace {
// Seed of choice `index` of a request: choice 0 uses the request's seed itself.
uint64_t choice_seed(uint64_t base, int32_t index) {
  return base + static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ull;
}

StreamEvent finished_event(int32_t index, FinishReason reason, const std::string& error) {
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::kFinished;
  ev.index = index;
  ev.finish = reason;
  ev.error = error;
  return ev;
}
}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const EngineConfig& config) {
  const ModelHParams& hp = model.hparams();
  if (config.block_size < 1 || config.block_size > 4096)
    return make_error("block size must be between 1 and 4096, got " + std::to_string(config.block_size));
  if (config.max_num_seqs < 1) return make_error("max-num-seqs must be at least 1");
  if (config.max_num_batched_tokens < 1) return make_error("max-num-batched-tokens must be at least 1");
  if (config.max_model_len < 0 || config.max_model_len > hp.n_ctx_train)
    return make_error("max-model-len " + std::to_string(config.max_model_len) +
                      " exceeds the model's training context of " + std::to_string(hp.n_ctx_train));
  KvPoolShape shape;
  shape.n_layer = hp.n_layer;
  shape.block_size = config.block_size;
  shape.n_kv_heads = hp.n_head_kv;
  shape.head_dim = hp.head_dim;
  shape.dtype = config.kv_cache_dtype;
  if (config.num_blocks > 0) {
    shape.num_blocks = config.num_blocks;
  } else {
    const uint64_t budget = config.kv_cache_bytes ? config.kv_cache_bytes : kDefaultKvCacheBytes;
    shape.num_blocks = KvPool::blocks_for_budget(shape, budget);
    if (shape.num_blocks < 1)
      return make_error("the KV cache budget of " + std::to_string(budget) + " bytes holds no block of " +
                        std::to_string(shape.bytes_per_block()) + " bytes");
    if (!config.kv_cache_bytes) {
      // The default budget need not exceed what max_num_seqs full-length sequences could use.
      const int64_t len = config.max_model_len ? config.max_model_len : hp.n_ctx_train;
      const int64_t useful = (len + config.block_size) / config.block_size * config.max_num_seqs;
      shape.num_blocks = std::min(shape.num_blocks, std::max<int64_t>(useful, 1));
    }
  }
  std::unique_ptr<DeviceForward> device;
  Result<std::unique_ptr<KvPool>> kv = make_error("no KV pool");
  if (config.device == Device::kCpu) {
    kv = KvPool::create(shape);
  } else {
    if (config.warm_start) return make_error("warm start runs on --device cpu only");
    if (config.probe_anchor_attention) return make_error("the anchor attention probe runs on --device cpu only");
    if (config.attention != AttentionImpl::kFused)
      return make_error("the reference attention runs on --device cpu only");
    auto created = create_device_forward(config.device, model);
    if (!created.ok()) return created.error();
    device = std::move(*created);
    auto memory = device->allocate_kv(shape);
    if (!memory.ok()) return memory.error();
    kv = KvPool::create_on_device(shape, std::move(*memory));
  }
  if (!kv.ok()) return kv.error();
  if (config.prefault_kv) (*kv)->prefault();
  return std::unique_ptr<Engine>(new Engine(model, config, std::move(*kv), std::move(device)));
}

Engine::Engine(const Model& model, const EngineConfig& config, std::unique_ptr<KvPool> kv,
               std::unique_ptr<DeviceForward> device)
    : model_(model),
      config_(config),
      device_(std::move(device)),
      kv_(std::move(kv)),
      ledger_(with_kv_share_in_blocks(config.tenants, kv_->shape().num_blocks)),
      seed_rng_(config.seed) {
  Clock* clock = config_.clock;
  if (!clock) {
    own_clock_ = std::make_unique<SteadyClock>();
    clock = own_clock_.get();
  }
  BlockManagerConfig bc;
  bc.num_blocks = static_cast<int32_t>(kv_->shape().num_blocks);
  bc.block_size = config_.block_size;
  bc.watermark_blocks = config_.watermark_blocks >= 0 ? config_.watermark_blocks : bc.num_blocks / 100;
  if (bc.watermark_blocks >= bc.num_blocks) bc.watermark_blocks = 0;
  bc.enable_prefix_caching = config_.enable_prefix_caching;
  blocks_ = std::make_unique<BlockManager>(bc, *clock);
  if (config_.kv_events) blocks_->enable_events();
  SchedulerConfig sc;
  sc.max_num_seqs = config_.max_num_seqs;
  sc.max_num_batched_tokens = config_.max_num_batched_tokens;
  sc.long_prefill_token_threshold = config_.long_prefill_token_threshold;
  sc.aging_horizon_ns = static_cast<int64_t>(config_.aging_horizon_s * 1e9);
  sc.tenants = config_.tenants;
  pool_ =
      std::make_unique<ThreadPool>(config_.num_threads > 0 ? config_.num_threads : ThreadPool::default_num_threads());
  max_model_len_ = config_.max_model_len > 0 ? config_.max_model_len : model_.hparams().n_ctx_train;
  sc.aging_reference_tokens = max_model_len_;  // a prompt of the whole context costs one horizon of waiting
  scheduler_ = std::make_unique<Scheduler>(sc, *blocks_, clock);
  if (config_.warm_start)
    warm_worker_ = std::make_unique<warmstart::WarmStartWorker>(config_.warm_start, [this] { wake(); });
  refresh_stats();
}

Engine::~Engine() {
  stop();
  warm_worker_.reset();  // no wake-ups from here on
  // Nobody will step any more: end every open choice so that no reader waits forever.
  take_inbox();
  finish_all(FinishReason::kCancelled, {});
}

std::string Engine::describe() const {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%s; max-num-seqs %d, max-num-batched-tokens %d, max-model-len %lld, %d threads",
                kv_->describe().c_str(), config_.max_num_seqs, config_.max_num_batched_tokens,
                static_cast<long long>(max_model_len_), pool_->num_threads());
  return device_ ? std::string(buf) + "; forward on " + device_->describe() : std::string(buf);
}

std::shared_ptr<RequestStream> Engine::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  return submit_group(std::move(one));
}

std::shared_ptr<RequestStream> Engine::submit_group(std::vector<GenerationRequest> requests) {
  return submit_states(std::move(requests), false);
}

Result<std::shared_ptr<RequestStream>> Engine::try_submit_group(std::vector<GenerationRequest> requests) {
  const std::string tenant = requests.empty() ? std::string() : requests.front().tenant;
  auto stream = submit_states(std::move(requests), true);
  if (stream) return stream;
  const TenantLedger::Entry* e = ledger_.find(tenant);
  Error err = make_error("tenant '" + tenant + "' has " + std::to_string(e ? e->limits.max_waiting : 0) +
                         " requests waiting already (max_waiting); retry later");
  err.code = "tenant_queue_full";
  return err;
}

std::shared_ptr<RequestStream> Engine::submit_states(std::vector<GenerationRequest> requests, bool enforce_max_waiting) {
  assert(!requests.empty());
  TenantLedger::Entry* tenant = ledger_.find(requests.front().tenant);
  if (tenant) {
    const int32_t n = static_cast<int32_t>(requests.size());
    if (!enforce_max_waiting)
      TenantLedger::enter_waiting(*tenant, n);
    else if (!TenantLedger::try_enter_waiting(*tenant, n))
      return nullptr;
  }
  int32_t total = 0;
  for (const GenerationRequest& r : requests) total += std::max(r.n, 1);
  auto stream = std::make_shared<RequestStream>(requests.front().id, requests.front().prompt, total, [this] { wake(); });
  std::vector<std::unique_ptr<RequestState>> states;
  int32_t offset = 0;
  for (GenerationRequest& r : requests) {
    auto rs = std::make_unique<RequestState>();
    rs->choice_offset = offset;
    offset += std::max(r.n, 1);
    rs->request = std::move(r);
    rs->stream = stream;
    rs->tenant = tenant;
    rs->counted_waiting = tenant != nullptr;
    states.push_back(std::move(rs));
  }
  {
    std::lock_guard lock(mu_);
    for (auto& rs : states) inbox_.push_back(std::move(rs));
    wake_pending_ = true;
  }
  cv_.notify_one();
  return stream;
}

void Engine::push_event(RequestState& rs, StreamEvent event) {
  event.index += rs.choice_offset;
  rs.stream->push(std::move(event));
}

void Engine::wake() {
  {
    std::lock_guard lock(mu_);
    wake_pending_ = true;
  }
  cv_.notify_one();
}

void Engine::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    for (;;) {
      {
        std::unique_lock lock(mu_);
        if (stop_) return;
      }
      bool worked = false;
      try {
        worked = step();
      } catch (const std::exception& e) {
        // A failed step (out of memory, say) fails the requests in flight, not the process.
        finish_all(FinishReason::kError, std::string("engine step failed: ") + e.what());
      }
      if (!worked) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || wake_pending_; });
        wake_pending_ = false;
      }
    }
  });
}

void Engine::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  stop_ = false;  // a later synchronous step() must be able to sleep in wait_for_wake() again
}

void Engine::take_inbox() {
  std::deque<std::unique_ptr<RequestState>> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(inbox_);
    wake_pending_ = false;  // anything queued from here on sets it again, so no command waits for a later wake-up
  }
  // Anchor commands before the requests: every command queued before one of these requests is visible now, so an
  // activation submitted before a request that names the anchor is in place for it, and a revocation takes effect
  // before anything else of this step.
  process_anchor_commands();
  for (auto& rs : batch) admit_request(std::move(rs));
}

void Engine::leave_waiting(RequestState& rs) {
  if (!rs.counted_waiting) return;
  rs.counted_waiting = false;
  TenantLedger::leave_waiting(*rs.tenant);
}

void Engine::fail_request(std::unique_ptr<RequestState> rs, const std::string& error) {
  leave_waiting(*rs);
  for (int32_t i = 0; i < std::max(rs->request.n, 1); ++i)
    push_event(*rs, finished_event(i, FinishReason::kError, error));
  ++requests_finished_;
}

void Engine::admit_request(std::unique_ptr<RequestState> rs) {
  const GenerationRequest& r = rs->request;
  const PinnedAnchor* anchor = nullptr;
  if (!r.anchor.empty()) {
    auto found = anchor_for(r.anchor);
    if (!found.ok()) return fail_request(std::move(rs), found.error().message);
    anchor = *found;
    if (config_.anchor_recheck.cadence == AnchorRecheckCadence::kSegment)
      if (Status st = recheck_anchor(r.anchor); !st.ok()) return fail_request(std::move(rs), st.error().message);
  }
  const int64_t anchor_len = anchor ? static_cast<int64_t>(anchor->tokens.size()) : 0;
  const int64_t len = anchor_len + static_cast<int64_t>(r.prompt.size());
  std::string error;
  if (r.prompt.empty()) {
    error = "the prompt is empty";
  } else if (len >= max_model_len_) {
    error = "the prompt has " + std::to_string(len) + " tokens; the maximum model length is " +
            std::to_string(max_model_len_) + " (prompt plus at least one generated token)";
  } else if (!blocks_->could_ever_allocate(static_cast<size_t>(len))) {
    error = "the prompt has " + std::to_string(len) + " tokens, more than the KV pool can ever hold (" +
            std::to_string(blocks_->num_blocks()) + " blocks of " + std::to_string(blocks_->block_size()) + " tokens)";
  } else if (r.max_tokens < 1) {
    error = "max_tokens must be at least 1";
  } else if (r.n < 1 || r.n > 128) {
    error = "n must be between 1 and 128";
  } else if (r.logprobs > 20) {
    error = "logprobs must be at most 20";
  } else if (r.forced_first_token && (*r.forced_first_token < 0 || *r.forced_first_token >= model_.hparams().n_vocab)) {
    error = "the forced first token " + std::to_string(*r.forced_first_token) + " is outside the vocabulary";
  } else if (Status st = r.sampling.validate(); !st.ok()) {
    error = st.error().message;
  } else {
    for (int32_t id : r.prompt)
      if (id < 0 || id >= model_.hparams().n_vocab) {
        error = "prompt token id " + std::to_string(id) + " is outside the vocabulary";
        break;
      }
    for (const auto& [id, bias] : r.sampling.logit_bias)
      if (id >= model_.hparams().n_vocab) {
        error = "logit_bias token id " + std::to_string(id) + " is outside the vocabulary";
        break;
      }
  }
  if (!error.empty()) return fail_request(std::move(rs), error);

  rs->ns = CacheNamespace{.model_id = config_.model_id,
                          .tenant = r.tenant,
                          .cache_salt = r.cache_salt,
                          .anchor_digest = anchor ? anchor->cache_scope : std::string()};
  rs->arrival = next_arrival_++;
  rs->base_seed = r.seed ? *r.seed : seed_rng_.next_u64();
  rs->open = std::max(r.n, 1);
  SamplingParams sp = r.sampling;
  sp.seed = choice_seed(rs->base_seed, 0);
  auto seq = std::make_unique<Sequence>(SeqId{next_seq_id_++}, rs.get(), 0, sp, model_.tokenizer(), r.stop);
  if (r.grammar) seq->grammar_state = r.grammar->matcher().initial();
  if (anchor) {
    seq->tokens = anchor->tokens;
    seq->tokens.insert(seq->tokens.end(), r.prompt.begin(), r.prompt.end());
    seq->prefix = anchor->seq;
    rs->anchor = r.anchor;
    rs->anchor_len = static_cast<int32_t>(anchor_len);
    rs->anchor_hidden_layers = anchor->hidden_layers;
    ++anchors_.at(r.anchor).users;
  } else {
    seq->tokens = r.prompt;
  }
  seq->prompt_len = len;
  seq->priority = r.priority;
  seq->arrival = rs->arrival;
  seq->ns = &rs->ns;
  seq->tenant = scheduler_->account(r.tenant);
  Sequence* first = seq.get();
  rs->seqs.push_back(std::move(seq));
  active_.push_back(std::move(rs));
  if (warm_worker_ && warm_start_eligible(*first)) {
    warm_pending_[first->id.value] = first;
    warm_worker_->submit({static_cast<uint64_t>(first->id.value),
                          std::vector<int32_t>(first->tokens.begin(), first->tokens.begin() + first->prompt_len),
                          first->sampler.params()});
  } else {
    scheduler_->add_waiting(first);
  }
}

bool Engine::warm_start_eligible(const Sequence& s) const {
  const GenerationRequest& r = s.request->request;
  return r.n == 1 && !r.grammar && r.logprobs < 0 && r.anchor.empty() && !r.forced_first_token;
}

void Engine::collect_warm_starts() {
  if (!warm_worker_) return;
  for (auto& done : warm_worker_->take_done()) {  // late decisions of released requests are dropped here too
    auto it = warm_pending_.find(static_cast<int64_t>(done.id));
    if (it == warm_pending_.end()) continue;
    Sequence* s = it->second;
    warm_pending_.erase(it);
    // A request cancelled while its decision ran is finished already (and its sequence released only once it
    // left warm_pending_, see release_finished_requests).
    if (s->state == Sequence::State::kFinished) continue;
    apply_warm_start(*s, std::move(done.decision));
    if (s->state != Sequence::State::kFinished) scheduler_->add_waiting(s);
  }
}

void Engine::wait_for_wake() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return stop_ || wake_pending_; });
}

void Engine::apply_warm_start(Sequence& s, Result<warmstart::WarmStartDecision> d) {
  if (!d.ok()) return finish(s, FinishReason::kError, "warm start: " + d.error().message);
  StreamEvent ev;
  ev.warm_start = d->hit ? WarmStartUse::kHit : WarmStartUse::kMiss;
  ev.warm_start_similarity = d->similarity;
  if (!d->hit) {
    s.warm_start_event = ev;  // said on the first token, sampled as usual
    return;
  }
  // The first token now; the scheduler then prefills prompt + this token, and token 2 is sampled from there.
  emit_token(s, d->token, d->logits, std::move(ev));
}

void Engine::process_cancellations() {
  for (auto& rs : active_)
    if (!rs->done && rs->stream->cancel_requested()) finish_request(*rs, FinishReason::kCancelled, {});
}

void Engine::finish_request(RequestState& rs, FinishReason reason, const std::string& error) {
  if (!rs.forked) {
    // Choices not forked yet never started: they finish too.
    for (int32_t i = 1; i < std::max(rs.request.n, 1); ++i) {
      push_event(rs, finished_event(i, reason, error));
      --rs.open;
    }
    rs.forked = true;
  }
  for (auto& s : rs.seqs)
    if (s->state != Sequence::State::kFinished) finish(*s, reason, error);
}

bool Engine::has_work() const {
  return scheduler_->num_running() > 0 || scheduler_->num_waiting() > 0 || !warm_pending_.empty();
}

bool Engine::step() {
  take_inbox();
  collect_warm_starts();
  process_cancellations();
  release_finished_requests();
  if (!has_work()) {
    refresh_stats();
    return false;
  }
  if (scheduler_->num_running() == 0 && scheduler_->num_waiting() == 0) {
    // Only warm-start decisions are in flight: sleep until one lands (its worker wakes us) or a request arrives.
    wait_for_wake();
    refresh_stats();
    return true;
  }
  SchedulerStep sched = scheduler_->schedule();
  for (Sequence* s : sched.rejected) {
    if (s->num_generated() > 0)
      finish(*s, FinishReason::kLength);  // grew past what the pool can hold
    else
      finish(*s, FinishReason::kError, "the request can never fit the KV pool");
  }
  for (Sequence* s : sched.over_tenant_blocks) {
    const TenantAccount& t = *s->tenant;
    finish(*s, FinishReason::kError,
           "the request needs " + std::to_string((s->tokens.size() + blocks_->block_size()) / blocks_->block_size()) +
               " KV blocks; tenant '" + t.name + "' may hold at most " + std::to_string(t.limits.max_kv_blocks) +
               " (max_kv_blocks)");
  }
  for (Sequence* s : sched.out_of_room) finish(*s, FinishReason::kLength);
  for (Sequence* s : sched.admitted) leave_waiting(*s->request);
  if (!ledger_.empty())
    for (const auto& [name, account] : scheduler_->accounts()) {
      TenantLedger::Entry* e = ledger_.find(name);
      e->running.store(account.running, std::memory_order_relaxed);
      e->kv_blocks.store(account.kv_blocks, std::memory_order_relaxed);
    }
  if (!sched.chunks.empty()) run_batch(sched);
  ++steps_;
  steps_started_.store(steps_, std::memory_order_release);
  release_finished_requests();
  refresh_stats();
  return true;
}

Status Engine::forward_batch_buffers(int32_t max_blocks) {
  ForwardBatch batch;
  batch.tokens = b_tokens_;
  batch.positions = b_positions_;
  batch.slot_mapping = b_slots_;
  batch.cu_seqlens_q = b_cu_;
  batch.seq_lens_kv = b_kv_lens_;
  batch.block_table = b_table_;
  batch.max_blocks = max_blocks;
  batch.logit_rows = b_logit_rows_;
  batch.hidden_prefix = b_hidden_prefix_;
  batch.hidden_prefix_layers = b_hidden_layers_;
  if (!b_probe_prefix_.empty()) {
    const ModelHParams& hp = model_.hparams();
    b_probe_mass_.resize(static_cast<size_t>(hp.n_layer * hp.n_head) * b_tokens_.size());
    batch.probe_prefix = b_probe_prefix_;
    batch.probe_mass = b_probe_mass_.data();
  }
  if (device_) return device_->forward(batch, kv_storage(), logits_);
  return transformer_forward_batch(model_, batch, kv_storage(), ws_, *pool_, logits_, config_.attention);
}

KvStorage Engine::kv_storage() const {
  KvStorage storage;
  storage.k_base = kv_->k(0);
  storage.v_base = kv_->v(0);
  storage.dtype = kv_->shape().dtype;
  storage.layer_stride = kv_->shape().layer_bytes();
  storage.num_slots = kv_->shape().token_capacity();
  storage.block_size = static_cast<int32_t>(kv_->shape().block_size);
  return storage;
}

void Engine::run_until_idle() {
  while (step()) {
  }
}

void Engine::fail_step(const SchedulerStep& sched, const std::string& message) {
  for (const ScheduledChunk& c : sched.chunks)
    if (c.seq->state != Sequence::State::kFinished) finish(*c.seq, FinishReason::kError, message);
}

void Engine::run_batch(const SchedulerStep& sched) {
  for (const BlockCopy& c : sched.copies) {
    const Status copied = kv_->copy_block(c.src, c.dst, c.num_slots);
    if (!copied.ok()) return fail_step(sched, copied.error().message);
  }

  // Build the step's batch: tokens, positions, slots and the attention metadata.
  b_tokens_.clear();
  b_positions_.clear();
  b_slots_.clear();
  b_cu_.assign(1, 0);
  b_kv_lens_.clear();
  b_logit_rows_.clear();
  b_logit_seqs_.clear();
  int32_t max_blocks = 1;
  for (const ScheduledChunk& c : sched.chunks)
    max_blocks = std::max(max_blocks, static_cast<int32_t>(blocks_->block_handles(c.seq->id).size()));
  b_table_.assign(sched.chunks.size() * max_blocks, 0);
  for (size_t i = 0; i < sched.chunks.size(); ++i) {
    const ScheduledChunk& c = sched.chunks[i];
    Sequence& s = *c.seq;
    const int64_t first = s.num_computed;
    for (int64_t p = first; p < first + c.num_tokens; ++p) {
      b_tokens_.push_back(s.tokens[p]);
      b_positions_.push_back(static_cast<int32_t>(p));
      b_slots_.push_back(blocks_->slot_of(s.id, p));
    }
    b_cu_.push_back(static_cast<int32_t>(b_tokens_.size()));
    b_kv_lens_.push_back(static_cast<int32_t>(first + c.num_tokens));
    const auto handles = blocks_->block_handles(s.id);
    for (size_t b = 0; b < handles.size(); ++b) b_table_[i * max_blocks + b] = handles[b].id.value;
    if (first + c.num_tokens == static_cast<int64_t>(s.tokens.size())) {
      b_logit_rows_.push_back(static_cast<int32_t>(b_tokens_.size()) - 1);
      b_logit_seqs_.push_back(&s);
    }
    if (first < s.prompt_len) prompt_tokens_computed_ += std::min<int64_t>(c.num_tokens, s.prompt_len - first);
  }
  build_anchor_seams(sched);
  if (config_.parallel_masks) prefetch_masks();
  Status st = forward_batch_buffers(max_blocks);
  if (mask_prefetcher_) mask_prefetcher_->wait();
  if (!st.ok()) return fail_step(sched, st.error().message);
  accumulate_anchor_attention(sched);
  for (const ScheduledChunk& c : sched.chunks) {
    c.seq->num_computed += c.num_tokens;
    blocks_->mark_computed(c.seq->id, c.seq->num_computed);
  }
  after_anchor_forward(sched);  // may finish sequences (a failed benchmark re-check): after their blocks' update
  const int64_t n_vocab = model_.hparams().n_vocab;
  for (size_t r = 0; r < b_logit_seqs_.size(); ++r) {
    Sequence& s = *b_logit_seqs_[r];
    if (s.state == Sequence::State::kFinished) continue;  // failed a benchmark re-check of its anchor
    const std::span<const float> row(logits_.data() + r * n_vocab, n_vocab);
    RequestState& rs = *s.request;
    if (!rs.forked) {
      fork_choices(s);  // the other choices share the prompt's blocks and sample from the same logits
      for (size_t i = 1; i < rs.seqs.size(); ++i) sample_and_emit(*rs.seqs[i], row);
    }
    sample_and_emit(s, row);
  }
}

void Engine::prefetch_masks() {
  std::vector<MaskPrefetcher::Job> jobs;
  for (Sequence* s : b_logit_seqs_) {
    const auto& g = s->request->request.grammar;
    if (!g || !s->grammar_state || s->grammar_state->dead() || g->has_mask(*s->grammar_state)) continue;
    jobs.push_back(MaskPrefetcher::Job{g, *s->grammar_state});
  }
  if (jobs.empty()) return;
  if (!mask_prefetcher_) mask_prefetcher_ = std::make_unique<MaskPrefetcher>();
  mask_prefetcher_->start(std::move(jobs));
}

void Engine::fork_choices(Sequence& parent) {
  RequestState& rs = *parent.request;
  rs.forked = true;
  const int32_t n = std::max(rs.request.n, 1);
  for (int32_t i = 1; i < n; ++i) {
    SamplingParams sp = rs.request.sampling;
    sp.seed = choice_seed(rs.base_seed, i);
    auto child = std::make_unique<Sequence>(SeqId{next_seq_id_++}, &rs, i, sp, model_.tokenizer(), rs.request.stop);
    child->tokens = parent.tokens;
    child->prompt_len = parent.prompt_len;
    child->num_computed = parent.num_computed;
    child->priority = parent.priority;
    child->arrival = parent.arrival;
    child->has_wait_key = parent.has_wait_key;
    child->wait_key_ns = parent.wait_key_ns;
    child->tenant = parent.tenant;
    child->ns = parent.ns;
    child->prefix = parent.prefix;  // a preempted child is admitted again from the same pinned anchor
    child->grammar_state = parent.grammar_state;  // the parent has not sampled yet: the grammar's start
    blocks_->fork(parent.id, child->id);
    scheduler_->add_running(child.get());
    rs.seqs.push_back(std::move(child));
  }
}

void Engine::sample_and_emit(Sequence& s, std::span<const float> logits) {
  const GenerationRequest& r = s.request->request;
  const std::span<const int32_t> prompt(s.tokens.data(), s.prompt_len);
  const std::span<const int32_t> output(s.tokens.data() + s.prompt_len, s.num_generated());
  std::span<const float> allowed = logits;
  if (r.grammar) {
    // Structured output: tokens the grammar does not allow next get -inf before sampling. Logprobs stay the
    // model's own (from the raw logits), as in OpenAI's API.
    const auto mask = r.grammar->mask(*s.grammar_state);
    masked_logits_.assign(logits.begin(), logits.end());
    // With ignore_eos the end tokens are never sampled (they would not end the choice, and the grammar would sit
    // where it may end); the choice still ends when the grammar allows nothing but the end.
    bool any = false;
    for (size_t i = 0; i < masked_logits_.size(); ++i) {
      if (mask->allowed(static_cast<int32_t>(i))) {
        any = true;
      } else {
        masked_logits_[i] = -std::numeric_limits<float>::infinity();
      }
    }
    if (r.ignore_eos) {
      for (int32_t id : r.grammar->trie().end_tokens()) masked_logits_[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
      any = mask->count() > static_cast<size_t>(std::count_if(r.grammar->trie().end_tokens().begin(), r.grammar->trie().end_tokens().end(),
                                                              [&](int32_t id) { return mask->allowed(id); }));
    }
    if (!any && r.ignore_eos && s.grammar_state->can_end()) return finish(s, FinishReason::kStop);
    if (!any) return finish(s, FinishReason::kError, "the output grammar allows no token here");
    allowed = masked_logits_;
  }
  const int32_t token = s.num_generated() == 0 && r.forced_first_token ? *r.forced_first_token
                                                                       : s.sampler.sample(allowed, prompt, output);
  StreamEvent ev;
  if (s.warm_start_event) {
    ev = *s.warm_start_event;
    s.warm_start_event.reset();
  }
  emit_token(s, token, logits, std::move(ev));
}

void Engine::emit_token(Sequence& s, int32_t token, std::span<const float> logits, StreamEvent ev) {
  const GenerationRequest& r = s.request->request;
  ev.index = s.index;
  ev.token = token;
  if (s.num_generated() == 0) ev.cached_prompt_tokens = s.cached_prompt_tokens;
  if (r.logprobs >= 0) ev.logprob = token_logprobs(logits, token, r.logprobs, &ev.top_logprobs);
  if (r.return_logits) ev.logits.assign(logits.begin(), logits.end());
  s.tokens.push_back(token);
  ++generated_tokens_;
  FinishReason reason = FinishReason::kNone;
  if (!r.ignore_eos && model_.tokenizer().is_end_of_generation(token)) {
    reason = FinishReason::kStop;
  } else {
    bool stopped = false;
    ev.text = s.stop.push(s.detokenizer.push(token), &stopped);
    if (stopped) {
      reason = FinishReason::kStop;
      s.text_done = true;
    }
  }
  if (r.grammar && reason == FinishReason::kNone) {
    // The grammar moves with the token's text; when it allows nothing but the end, the choice is complete.
    s.grammar_state = r.grammar->matcher().advance(*s.grammar_state, grammar::grammar_piece(model_.tokenizer(), token));
    if (s.grammar_state->must_end()) reason = FinishReason::kStop;  // finish() releases any held-back text
  }
  if (reason == FinishReason::kNone &&
      (s.num_generated() >= r.max_tokens || static_cast<int64_t>(s.tokens.size()) >= max_model_len_))
    reason = FinishReason::kLength;
  push_event(*s.request, std::move(ev));
  if (reason != FinishReason::kNone) finish(s, reason);
}

void Engine::finish(Sequence& s, FinishReason reason, const std::string& error) {
  if (s.state != Sequence::State::kFinished) scheduler_->remove(&s);
  s.state = Sequence::State::kFinished;
  StreamEvent ev = finished_event(s.index, reason, error);
  // Text still held back (an unfinished character, a possible stop-string prefix) is released, unless a stop
  // string ended the choice: then the held text belonged to it.
  if (!s.text_done) {
    bool stopped = false;
    ev.text = s.stop.push(s.detokenizer.flush(), &stopped);
    if (!stopped) ev.text += s.stop.flush();
    s.text_done = true;
  }
  if (reason == FinishReason::kStop) ev.stop_string = s.stop.matched();
  RequestState* rs = s.request;
  push_event(*rs, std::move(ev));
  if (--rs->open == 0) {
    leave_waiting(*rs);
    ++requests_finished_;
    rs->done = true;  // released at the end of the step, once nothing points at its sequences
  }
}

void Engine::release_finished_requests() {
  active_.remove_if([this](const std::unique_ptr<RequestState>& p) {
    if (!p->done) return false;
    for (const auto& s : p->seqs)
      if (warm_pending_.erase(s->id.value) > 0) warm_worker_->cancel(static_cast<uint64_t>(s->id.value));
    if (!p->anchor.empty()) release_anchor_user(p->anchor);
    return true;
  });
  unpin_unused_anchors();
}

void Engine::finish_all(FinishReason reason, const std::string& error) {
  for (auto& rs : active_)
    if (!rs->done) finish_request(*rs, reason, error);
  release_finished_requests();
}

void Engine::refresh_stats() {
  // Once per step (every path of step() ends here): the step's KV-cache events, batched.
  if (config_.kv_events)
    if (std::vector<KvCacheEvent> events = blocks_->take_events(); !events.empty()) config_.kv_events(std::move(events));
  EngineStats st;
  st.blocks = blocks_->stats();
  st.block_size = blocks_->block_size();
  st.steps = steps_;
  st.preemptions = scheduler_->num_preemptions();
  st.running = scheduler_->num_running();
  st.waiting = scheduler_->num_waiting();
  peak_used_blocks_ = std::max(peak_used_blocks_, st.blocks.used_blocks);
  st.peak_used_blocks = peak_used_blocks_;
  peak_seq_slack_ = std::max(peak_seq_slack_, st.blocks.max_seq_slack_slots);
  st.peak_seq_slack_slots = peak_seq_slack_;
  st.prompt_tokens_computed = prompt_tokens_computed_;
  if (config_.warm_start) st.warm_start = config_.warm_start->stats();
  st.warm_start_pending = static_cast<int64_t>(warm_pending_.size());
  st.generated_tokens = generated_tokens_;
  st.requests_finished = requests_finished_;
  if (mask_prefetcher_) st.masks_prefetched = static_cast<int64_t>(mask_prefetcher_->masks_computed());
  st.anchor_rechecks = anchor_rechecks_;
  st.anchor_recheck_seconds = anchor_recheck_seconds_;
  std::lock_guard lock(mu_);
  stats_ = st;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mu_);
  EngineStats st = stats_;
  st.waiting += static_cast<int32_t>(inbox_.size());  // submitted, not yet seen by the scheduler
  return st;
}

}  // namespace pagoda
