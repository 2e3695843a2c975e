// The engine's side of verified anchors: pinned prefill at activation, admission from pinned blocks, and
// deactivation / revocation at step boundaries. Nothing here verifies anything: the anchor module has done that
// before a digest reaches the engine, and the token loop never looks at anchors (a sequence only carries the
// pinned sequence it started from, as a prefix of its block table).
#include <bit>
#include <chrono>
#include <cmath>
#include <map>

#include "engine/engine.h"

namespace pagoda {

std::future<Result<AnchorActivation>> Engine::activate_anchor(std::string digest, std::vector<int32_t> tokens,
                                                              AnchorServing serving) {
  AnchorCommand c;
  c.kind = AnchorCommand::Kind::kActivate;
  c.digest = std::move(digest);
  c.tokens = std::move(tokens);
  c.serving = std::move(serving);
  c.done = std::make_shared<std::promise<Result<AnchorActivation>>>();
  auto future = c.done->get_future();
  push_anchor_command(std::move(c));
  return future;
}

void Engine::deactivate_anchor(const std::string& digest) {
  push_anchor_command(AnchorCommand{AnchorCommand::Kind::kDeactivate, digest, {}, {}, nullptr});
}

void Engine::revoke_anchor(const std::string& digest) {
  push_anchor_command(AnchorCommand{AnchorCommand::Kind::kRevoke, digest, {}, {}, nullptr});
}

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void Engine::push_anchor_command(AnchorCommand command) {
  command.arrival_step = steps_started_.load(std::memory_order_acquire);
  command.arrival_ns = steady_ns();
  {
    std::lock_guard lock(mu_);
    anchor_inbox_.push_back(std::move(command));
    anchor_epoch_.fetch_add(1, std::memory_order_release);
    wake_pending_ = true;
  }
  cv_.notify_one();
}

void Engine::process_anchor_commands() {
  const uint64_t epoch = anchor_epoch_.load(std::memory_order_acquire);
  if (epoch == anchor_epoch_seen_) return;  // nothing queued since the last step looked
  anchor_epoch_seen_ = epoch;
  std::deque<AnchorCommand> commands;
  {
    std::lock_guard lock(mu_);
    commands.swap(anchor_inbox_);
  }
  for (AnchorCommand& c : commands) {
    switch (c.kind) {
      case AnchorCommand::Kind::kActivate:
        c.done->set_value(pin_anchor(c.digest, c.tokens, c.serving));
        break;
      case AnchorCommand::Kind::kRevoke:
        record_revocation(c);
        // Every request that started from the anchor ends now: none of them runs another step with it.
        for (auto& rs : active_)
          if (!rs->done && rs->anchor == c.digest) finish_request(*rs, FinishReason::kAnchorRevoked, {});
        [[fallthrough]];
      case AnchorCommand::Kind::kDeactivate:
        if (auto it = anchors_.find(c.digest); it != anchors_.end()) it->second.accepting = false;
        break;
    }
  }
  // Waiting requests that named a revoked or deactivated anchor were finished above (revoke) or are refused at
  // admission (their anchor no longer accepts); release_finished_requests() unpins what nobody uses.
  release_finished_requests();
}

namespace {

// The layers an anchor is hidden from, or null when it is visible to all of them; an error names a bad mask.
Result<std::shared_ptr<const std::vector<uint8_t>>> hidden_layers_of(const AnchorServing& serving, int64_t n_layer) {
  if (serving.visible_layers.empty()) return std::shared_ptr<const std::vector<uint8_t>>();
  if (static_cast<int64_t>(serving.visible_layers.size()) != n_layer)
    return make_coded_error("bad_field", "the anchor's layer mask has " + std::to_string(serving.visible_layers.size()) +
                                             " entries; the model has " + std::to_string(n_layer) + " layers");
  auto hidden = std::make_shared<std::vector<uint8_t>>(n_layer);
  bool any = false;
  for (int64_t l = 0; l < n_layer; ++l) {
    (*hidden)[l] = serving.visible_layers[l] == 0 ? 1 : 0;
    any = any || (*hidden)[l];
  }
  if (!any) return std::shared_ptr<const std::vector<uint8_t>>();  // visible everywhere: the default
  return std::shared_ptr<const std::vector<uint8_t>>(std::move(hidden));
}

// "layers 10101": 1 where the anchor is visible.
std::string mask_text(const std::shared_ptr<const std::vector<uint8_t>>& hidden) {
  if (!hidden) return "all layers";
  std::string visible;
  for (size_t l = 0; l < hidden->size(); ++l) visible += (*hidden)[l] ? '0' : '1';
  return "layers " + visible;
}

}  // namespace

Result<AnchorActivation> Engine::pin_anchor(const std::string& digest, const std::vector<int32_t>& tokens,
                                            const AnchorServing& serving) {
  if (kv_->on_device())  // an anchor's K/V digest is read on the host
    return make_coded_error("bad_field", "anchors are served on --device cpu only (this engine runs on " +
                                             std::string(device_name(config_.device)) + ")");
  auto hidden = hidden_layers_of(serving, model_.hparams().n_layer);
  if (!hidden.ok()) return hidden.error();
  if (auto it = anchors_.find(digest); it != anchors_.end()) {
    const auto& have = it->second.hidden_layers;
    if ((have == nullptr) != (*hidden == nullptr) || (have && *have != **hidden))
      return make_coded_error("anchor_conflict", "anchor " + digest + " is active with visibility " +
                                                     mask_text(have) + ", not " + mask_text(*hidden));
    it->second.accepting = true;  // activated again after a deactivation whose users are still running
    return AnchorActivation{static_cast<int32_t>(it->second.tokens.size()), it->second.blocks, 0.0};
  }
  if (tokens.empty()) return make_coded_error("bad_field", "an anchor needs at least one token");
  if (static_cast<int64_t>(tokens.size()) >= max_model_len_)
    return make_coded_error("too_large", "the anchor has " + std::to_string(tokens.size()) +
                                             " tokens; the maximum model length is " + std::to_string(max_model_len_));
  for (int32_t id : tokens)
    if (id < 0 || id >= model_.hparams().n_vocab)
      return make_coded_error("bad_field", "anchor token id " + std::to_string(id) + " is outside the vocabulary");
  const int32_t bs = blocks_->block_size();
  const int32_t needed = static_cast<int32_t>((tokens.size() + bs - 1) / bs);
  const int32_t budget = static_cast<int32_t>(std::floor(config_.anchor_max_pinned_frac * blocks_->num_blocks()));
  if (pinned_anchor_blocks_ + needed > budget)
    return make_coded_error("anchor_pool_full", "pinning " + std::to_string(needed) + " more blocks would exceed " +
                                                    "the anchors' share of the KV pool (" + std::to_string(budget) +
                                                    " blocks, " + std::to_string(pinned_anchor_blocks_) + " pinned)");
  if (!blocks_->can_allocate_pinned(tokens.size()))
    return make_coded_error("anchor_pool_full", "the KV pool has no room for " + std::to_string(needed) +
                                                    " blocks now; retry when requests have finished");
  const auto start = std::chrono::steady_clock::now();
  const SeqId seq{next_seq_id_++};
  const CacheNamespace ns{.model_id = config_.model_id, .tenant = {}, .cache_salt = {}, .anchor_digest = digest};
  blocks_->allocate_pinned(seq, tokens, ns);
  // Prefill in chunks of the step's token budget; no logits are wanted. The arithmetic per token does not depend
  // on the batch, so these K/V are bitwise those a request would compute for the same tokens at the same positions.
  const int64_t A = static_cast<int64_t>(tokens.size());
  const auto handles = blocks_->block_handles(seq);
  b_table_.resize(handles.size());
  for (size_t b = 0; b < handles.size(); ++b) b_table_[b] = handles[b].id.value;
  for (int64_t first = 0; first < A;) {
    const int64_t n = std::min<int64_t>(A - first, config_.max_num_batched_tokens);
    b_tokens_.assign(tokens.begin() + first, tokens.begin() + first + n);
    b_positions_.clear();
    b_slots_.clear();
    for (int64_t p = first; p < first + n; ++p) {
      b_positions_.push_back(static_cast<int32_t>(p));
      b_slots_.push_back(blocks_->slot_of(seq, p));
    }
    b_cu_.assign({0, static_cast<int32_t>(n)});
    b_kv_lens_.assign({static_cast<int32_t>(first + n)});
    b_logit_rows_.clear();
    b_hidden_prefix_.clear();  // the anchor itself sees all its own keys, in every layer
    b_probe_prefix_.clear();
    if (Status st = forward_batch_buffers(static_cast<int32_t>(handles.size())); !st.ok()) {
      blocks_->free(seq);
      return make_coded_error("activation_failed", "the anchor's prefill failed: " + st.error().message);
    }
    first += n;
  }
  blocks_->mark_computed(seq, A);
  PinnedAnchor pinned;
  if (config_.anchor_recheck.cadence != AnchorRecheckCadence::kSession)
    pinned.kv_digest = hash_kv_blocks(*kv_, blocks_->block_handles(seq), A);
  pinned.seq = seq;
  pinned.tokens = tokens;
  pinned.blocks = needed;
  pinned.hidden_layers = *hidden;
  // Requests' blocks computed with the anchor hidden from some layers hold other K/V than those computed without.
  pinned.cache_scope = *hidden ? digest + "|visible " + mask_text(*hidden) : digest;
  anchors_.emplace(digest, std::move(pinned));
  pinned_anchor_blocks_ += needed;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return AnchorActivation{static_cast<int32_t>(A), needed, seconds};
}

Result<const Engine::PinnedAnchor*> Engine::anchor_for(const std::string& digest) const {
  auto it = anchors_.find(digest);
  if (it == anchors_.end() || !it->second.accepting)
    return make_coded_error("anchor_not_found", "anchor " + digest + " is not active");
  return &it->second;
}

void Engine::release_anchor_user(const std::string& digest) {
  auto it = anchors_.find(digest);
  if (it != anchors_.end() && it->second.users > 0) --it->second.users;
}

void Engine::unpin_unused_anchors() {
  for (auto it = anchors_.begin(); it != anchors_.end();) {
    if (it->second.accepting || it->second.users > 0) {
      ++it;
      continue;
    }
    blocks_->free(it->second.seq);  // blocks a running sequence still shares stay until it finishes
    pinned_anchor_blocks_ -= it->second.blocks;
    it = anchors_.erase(it);
  }
}

void Engine::record_revocation(const AnchorCommand& c) {
  AnchorRevocationReport report;
  report.arrival_step = c.arrival_step;
  report.applied_step = steps_;
  if (auto it = anchors_.find(c.digest); it != anchors_.end() && it->second.last_attended_step >= 0) {
    report.last_attended_step = it->second.last_attended_step;
    report.arrival_to_last_attended_end_s = std::max(0.0, (it->second.last_attended_end_ns - c.arrival_ns) * 1e-9);
  }
  std::lock_guard lock(mu_);
  revocations_[c.digest] = report;
}

Status Engine::recheck_anchor(const std::string& digest) {
  const auto start = std::chrono::steady_clock::now();
  auto it = anchors_.find(digest);
  if (it == anchors_.end()) return make_coded_error("anchor_not_found", "anchor " + digest + " is not pinned");
  Status st;
  if (!config_.anchor_recheck.verify_signature)
    st = make_error("the anchor re-check cadence needs a signature check");
  else
    st = config_.anchor_recheck.verify_signature(digest);
  if (st.ok() && hash_kv_blocks(*kv_, blocks_->block_handles(it->second.seq),
                                static_cast<int64_t>(it->second.tokens.size())) != it->second.kv_digest)
    st = make_coded_error("anchor_kv_mismatch", "the K/V blocks of anchor " + digest + " changed since its prefill");
  ++anchor_rechecks_;
  anchor_recheck_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return st;
}

void Engine::after_anchor_forward(const SchedulerStep& sched) {
  if (anchors_.empty()) return;
  const int64_t end_ns = steady_ns();
  for (const ScheduledChunk& c : sched.chunks) {
    const RequestState& rs = *c.seq->request;
    if (rs.anchor.empty()) continue;
    if (auto it = anchors_.find(rs.anchor); it != anchors_.end()) {
      it->second.last_attended_step = steps_;
      it->second.last_attended_end_ns = end_ns;
    }
  }
  const AnchorRecheckCadence cadence = config_.anchor_recheck.cadence;
  if (cadence == AnchorRecheckCadence::kStep) {
    // Once per step and anchor, shared by every sequence of the step that samples from it.
    std::map<std::string, Status> checked;
    for (Sequence* s : b_logit_seqs_) {
      const RequestState& rs = *s->request;
      if (rs.anchor.empty() || s->state == Sequence::State::kFinished) continue;
      auto it = checked.find(rs.anchor);
      if (it == checked.end()) it = checked.emplace(rs.anchor, recheck_anchor(rs.anchor)).first;
      if (!it->second.ok()) finish(*s, FinishReason::kError, it->second.error().message);
    }
    return;
  }
  if (cadence != AnchorRecheckCadence::kBlock && cadence != AnchorRecheckCadence::kToken) return;
  // The sequences about to sample a token: their generated count is the token's index.
  for (Sequence* s : b_logit_seqs_) {
    const RequestState& rs = *s->request;
    if (rs.anchor.empty() || s->state == Sequence::State::kFinished) continue;
    if (cadence == AnchorRecheckCadence::kBlock && s->num_generated() % kAnchorRecheckBlockTokens != 0) continue;
    if (Status st = recheck_anchor(rs.anchor); !st.ok()) finish(*s, FinishReason::kError, st.error().message);
  }
}

std::optional<AnchorRevocationReport> Engine::anchor_revocation(const std::string& digest) const {
  std::lock_guard lock(mu_);
  auto it = revocations_.find(digest);
  if (it == revocations_.end()) return std::nullopt;
  return it->second;
}

void Engine::build_anchor_seams(const SchedulerStep& sched) {
  b_hidden_prefix_.clear();
  b_hidden_layers_.clear();
  b_probe_prefix_.clear();
  const int64_t n_layer = model_.hparams().n_layer;
  bool masked = false;
  for (const ScheduledChunk& c : sched.chunks) masked = masked || c.seq->request->anchor_hidden_layers != nullptr;
  if (masked) {
    for (const ScheduledChunk& c : sched.chunks) {
      const RequestState& rs = *c.seq->request;
      b_hidden_prefix_.push_back(rs.anchor_hidden_layers ? rs.anchor_len : 0);
      if (rs.anchor_hidden_layers)
        b_hidden_layers_.insert(b_hidden_layers_.end(), rs.anchor_hidden_layers->begin(), rs.anchor_hidden_layers->end());
      else
        b_hidden_layers_.insert(b_hidden_layers_.end(), n_layer, 0);
    }
  }
  if (config_.probe_anchor_attention)
    for (const ScheduledChunk& c : sched.chunks) b_probe_prefix_.push_back(c.seq->request->anchor_len);
}

void Engine::accumulate_anchor_attention(const SchedulerStep& sched) {
  if (!config_.probe_anchor_attention) return;
  const int64_t L = model_.hparams().n_layer, H = model_.hparams().n_head;
  const int64_t T = static_cast<int64_t>(b_tokens_.size());
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < sched.chunks.size(); ++i) {
    const Sequence& s = *sched.chunks[i].seq;
    const RequestState& rs = *s.request;
    if (rs.anchor.empty()) continue;
    AnchorAttention& a = anchor_attention_[rs.anchor];
    if (a.prompt_mass.empty()) {
      a.n_layer = static_cast<int32_t>(L);
      a.n_head = static_cast<int32_t>(H);
      a.prompt_mass.assign(L * H, 0.0);
      a.generated_mass.assign(L * H, 0.0);
    }
    const int64_t A = rs.anchor_len;
    for (int32_t row = b_cu_[i]; row < b_cu_[i + 1]; ++row) {
      const int64_t position = s.num_computed + (row - b_cu_[i]);
      const bool generated = position >= s.prompt_len;
      std::vector<double>& sums = generated ? a.generated_mass : a.prompt_mass;
      ++(generated ? a.generated_queries : a.prompt_queries);
      const int64_t bucket = std::bit_width(static_cast<uint64_t>(position - A + 1)) - 1;
      if (static_cast<int64_t>(a.distance_queries.size()) <= bucket) {
        a.distance_queries.resize(bucket + 1, 0);
        a.distance_mass.resize((bucket + 1) * L * H, 0.0);
      }
      ++a.distance_queries[bucket];
      for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h) {
          const double m = b_probe_mass_[(l * T + row) * H + h];
          sums[l * H + h] += m;
          a.distance_mass[(bucket * L + l) * H + h] += m;
        }
    }
  }
}

std::optional<AnchorAttention> Engine::anchor_attention(const std::string& digest) const {
  std::lock_guard lock(mu_);
  auto it = anchor_attention_.find(digest);
  if (it == anchor_attention_.end()) return std::nullopt;
  AnchorAttention mean = it->second;  // sums -> means
  for (double& m : mean.prompt_mass) m = mean.prompt_queries ? m / mean.prompt_queries : 0.0;
  for (double& m : mean.generated_mass) m = mean.generated_queries ? m / mean.generated_queries : 0.0;
  const size_t per_bucket = static_cast<size_t>(mean.n_layer) * mean.n_head;
  for (size_t b = 0; b < mean.distance_queries.size(); ++b)
    for (size_t i = 0; i < per_bucket; ++i)
      if (mean.distance_queries[b]) mean.distance_mass[b * per_bucket + i] /= mean.distance_queries[b];
  return mean;
}

}  // namespace pagoda
