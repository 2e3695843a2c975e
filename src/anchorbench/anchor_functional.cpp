#include "anchorbench/anchor_functional.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "anchorbench/bench_texts.h"
#include "engine/sequence_runner.h"
#include "util/rng.h"
#include "util/thread_pool.h"

namespace pagoda::anchorbench {
namespace {

struct Output {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;  // [generated][n_vocab]
};

// One request on a manually stepped engine, to its end.
Result<Output> run_request(Engine& e, GenerationRequest r) {
  r.return_logits = true;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  auto stream = e.submit(std::move(r));
  e.run_until_idle();
  Output out;
  StreamEvent ev;
  while (stream->try_next(&ev)) {
    if (ev.kind == StreamEvent::Kind::kToken) {
      out.ids.push_back(ev.token);
      out.logits.push_back(std::move(ev.logits));
    } else if (ev.finish == FinishReason::kError) {
      return make_error("a functional request failed: " + ev.error);
    }
  }
  if (out.ids.empty()) return make_error("a functional request produced no token");
  return out;
}

std::vector<double> log_softmax(std::span<const float> logits) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - lse;
  return out;
}

// KL(p || q) from logits.
double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  const auto lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::vector<int32_t> encode(const Model& m, const std::string& text, bool bos) {
  return m.tokenizer().encode(text, bos, /*parse_special=*/false);
}

Result<std::unique_ptr<Engine>> make_engine(const BenchSetup& setup, bool probe) {
  EngineConfig c = setup.engine;
  c.enable_prefix_caching = true;
  c.probe_anchor_attention = probe;
  c.anchor_recheck = {};
  return Engine::create(*setup.model, c);
}

Result<SignedAnchor> pin_signed(Engine& e, Result<SignedAnchor> s) {
  if (!s.ok()) return s.error();
  auto f = e.activate_anchor(s->digest, s->tokens);
  e.step();
  auto a = f.get();
  if (!a.ok()) return a.error();
  return s;
}

Result<SignedAnchor> pin(const BenchSetup& setup, Engine& e, const std::string& text, const std::string& lineage) {
  return pin_signed(e, setup.signer->sign_and_verify(text, lineage));
}

bool bitwise_equal(const Output& a, const Output& b) {
  if (a.ids != b.ids || a.logits.size() != b.logits.size()) return false;
  for (size_t i = 0; i < a.logits.size(); ++i)
    if (a.logits[i].size() != b.logits[i].size() ||
        std::memcmp(a.logits[i].data(), b.logits[i].data(), a.logits[i].size() * sizeof(float)) != 0)
      return false;
  return true;
}

}  // namespace

Result<FactResult> measure_facts(const BenchSetup& setup, const FunctionalOptions& o) {
  const Model& m = *setup.model;
  auto created = make_engine(setup, false);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  FactResult out;
  const auto facts = fact_probes(o.facts);
  int64_t answer_tokens = 0;
  double lp_anchor = 0, lp_none = 0, lp_text = 0;
  int32_t hit_anchor = 0, hit_none = 0, hit_text = 0;
  for (size_t f = 0; f < facts.size(); ++f) {
    auto pinned = pin(setup, e, facts[f].anchor_text, "fact" + std::to_string(f));
    if (!pinned.ok()) return pinned.error();
    ++out.facts;
    const std::vector<int32_t> answer = encode(m, facts[f].answer, false);
    for (const std::string& probe : facts[f].probes) {
      const std::vector<int32_t> probe_ids = encode(m, probe, false);
      bool gate0 = true;
      for (size_t k = 0; k < answer.size(); ++k) {
        std::vector<int32_t> tail = probe_ids;
        tail.insert(tail.end(), answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(k));
        GenerationRequest with_anchor, plain_text, without;
        with_anchor.max_tokens = plain_text.max_tokens = without.max_tokens = 1;
        with_anchor.anchor = pinned->digest;
        with_anchor.prompt = tail;
        plain_text.prompt = pinned->tokens;
        plain_text.prompt.insert(plain_text.prompt.end(), tail.begin(), tail.end());
        without.prompt = encode(m, "", true);
        without.prompt.insert(without.prompt.end(), tail.begin(), tail.end());
        auto a = run_request(e, with_anchor);
        auto t = run_request(e, plain_text);
        auto n = run_request(e, without);
        if (!a.ok()) return a.error();
        if (!t.ok()) return t.error();
        if (!n.ok()) return n.error();
        gate0 = gate0 && bitwise_equal(*a, *t);
        lp_anchor += log_softmax(a->logits[0])[answer[k]];
        lp_text += log_softmax(t->logits[0])[answer[k]];
        lp_none += log_softmax(n->logits[0])[answer[k]];
        ++answer_tokens;
        if (k == 0) {
          hit_anchor += argmax(a->logits[0]) == answer[0];
          hit_text += argmax(t->logits[0]) == answer[0];
          hit_none += argmax(n->logits[0]) == answer[0];
        }
      }
      ++out.probes;
      out.gate0_bitwise += gate0 ? 1 : 0;
    }
    e.deactivate_anchor(pinned->digest);
    e.run_until_idle();
  }
  if (answer_tokens > 0) {
    out.mean_logprob_anchor = lp_anchor / answer_tokens;
    out.mean_logprob_text = lp_text / answer_tokens;
    out.mean_logprob_none = lp_none / answer_tokens;
  }
  if (out.probes > 0) {
    out.top1_anchor = static_cast<double>(hit_anchor) / out.probes;
    out.top1_text = static_cast<double>(hit_text) / out.probes;
    out.top1_none = static_cast<double>(hit_none) / out.probes;
  }
  return out;
}

Result<AttentionResult> measure_attention(const BenchSetup& setup, const FunctionalOptions& o) {
  const Model& m = *setup.model;
  auto created = make_engine(setup, true);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  AttentionResult out;
  out.n_layer = static_cast<int32_t>(m.hparams().n_layer);
  out.n_head = static_cast<int32_t>(m.hparams().n_head);
  const int64_t L = out.n_layer, H = out.n_head;
  std::vector<double> bucket_sums;  // [buckets, L] weighted by queries
  std::vector<double> head_sums(L * H, 0.0);
  const auto facts = fact_probes(o.facts);
  for (size_t f = 0; f < facts.size(); ++f) {
    auto pinned = pin(setup, e, facts[f].anchor_text, "attn" + std::to_string(f));
    if (!pinned.ok()) return pinned.error();
    GenerationRequest r;
    r.anchor = pinned->digest;
    r.prompt = encode(m, facts[f].probes.front(), false);
    r.max_tokens = o.drift_positions;
    if (auto out_r = run_request(e, r); !out_r.ok()) return out_r.error();
    auto a = e.anchor_attention(pinned->digest);
    if (!a) return make_error("the attention probe measured nothing");
    if (bucket_sums.size() < a->distance_queries.size() * L) {
      bucket_sums.resize(a->distance_queries.size() * L, 0.0);
      out.bucket_queries.resize(a->distance_queries.size(), 0);
    }
    for (size_t b = 0; b < a->distance_queries.size(); ++b) {
      out.bucket_queries[b] += a->distance_queries[b];
      for (int64_t l = 0; l < L; ++l) {
        double layer_mean = 0;
        for (int64_t h = 0; h < H; ++h) layer_mean += a->distance_mass[(b * L + l) * H + h] / H;
        bucket_sums[b * L + l] += layer_mean * a->distance_queries[b];
      }
    }
    for (int64_t i = 0; i < L * H; ++i) head_sums[i] += a->generated_mass[i] * a->generated_queries;
    out.generated_queries += a->generated_queries;
    e.deactivate_anchor(pinned->digest);
    e.run_until_idle();
  }
  out.bucket_layer_mass.assign(bucket_sums.size(), 0.0);
  for (size_t b = 0; b < out.bucket_queries.size(); ++b)
    for (int64_t l = 0; l < L; ++l)
      if (out.bucket_queries[b]) out.bucket_layer_mass[b * L + l] = bucket_sums[b * L + l] / out.bucket_queries[b];
  out.generated_head_mass.assign(L * H, 0.0);
  for (int64_t i = 0; i < L * H; ++i)
    if (out.generated_queries) out.generated_head_mass[i] = head_sums[i] / out.generated_queries;
  return out;
}

Result<DriftResult> measure_drift(const BenchSetup& setup, const FunctionalOptions& o) {
  const Model& m = *setup.model;
  auto created = make_engine(setup, false);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  ThreadPool pool(std::max(1, setup.engine.num_threads));
  SequenceRunner runner(m, pool, 0, setup.engine.kv_cache_dtype);
  DriftResult out;
  out.kl_by_position.assign(o.drift_positions, 0.0);
  const auto facts = fact_probes(o.facts);
  for (size_t f = 0; f < facts.size(); ++f) {
    auto pinned = pin(setup, e, facts[f].anchor_text, "drift" + std::to_string(f));
    if (!pinned.ok()) return pinned.error();
    GenerationRequest r;
    r.anchor = pinned->digest;
    r.prompt = encode(m, facts[f].probes.front(), false);
    r.max_tokens = o.drift_positions;
    auto with = run_request(e, r);
    if (!with.ok()) return with.error();
    // Without the anchor: the same prompt with its own BOS, fed the tokens generated with the anchor.
    runner.reset();
    std::vector<int32_t> prompt = encode(m, "", true);
    prompt.insert(prompt.end(), r.prompt.begin(), r.prompt.end());
    auto logits = runner.eval(prompt);
    for (int32_t p = 0; p < o.drift_positions; ++p) {
      if (!logits.ok()) return logits.error();
      out.kl_by_position[p] += kl_divergence(with->logits[p], *logits);
      const int32_t next = with->ids[p];
      logits = runner.eval(std::span<const int32_t>(&next, 1));
    }
    ++out.sequences;
    e.deactivate_anchor(pinned->digest);
    e.run_until_idle();
  }
  double total = 0;
  for (double& kl : out.kl_by_position) {
    kl /= std::max(1, out.sequences);
    total += kl;
  }
  out.mean_kl = o.drift_positions ? total / o.drift_positions : 0;
  return out;
}

Result<ContinuityResult> measure_continuity(const BenchSetup& setup, const FunctionalOptions& o) {
  const Model& m = *setup.model;
  ContinuityResult out;
  const auto facts = fact_probes(o.facts);
  for (size_t f = 0; f < facts.size(); ++f) {
    GenerationRequest r;
    r.prompt = encode(m, facts[f].probes.back(), false);
    r.max_tokens = 16;
    Output first, second, restarted;
    std::string envelope;
    {
      auto created = make_engine(setup, false);
      if (!created.ok()) return created.error();
      Engine& e = **created;
      auto pinned = pin(setup, e, facts[f].anchor_text, "cont" + std::to_string(f));
      if (!pinned.ok()) return pinned.error();
      r.anchor = pinned->digest;
      envelope = pinned->envelope_json;
      auto a = run_request(e, r);
      if (!a.ok()) return a.error();
      first = std::move(*a);
      // Other traffic in between: unrelated prompts, and the same anchor with another prompt.
      GenerationRequest other;
      other.prompt = encode(m, "Once upon a time, there was a little " + facts[(f + 1) % facts.size()].answer, true);
      other.max_tokens = 8;
      if (auto x = run_request(e, other); !x.ok()) return x.error();
      GenerationRequest other_anchor = r;
      other_anchor.prompt = encode(m, facts[f].probes.front(), false);
      if (auto x = run_request(e, other_anchor); !x.ok()) return x.error();
      auto b = run_request(e, r);
      if (!b.ok()) return b.error();
      second = std::move(*b);
    }
    {
      // A restart: a new engine, the same envelope verified and pinned again.
      auto created = make_engine(setup, false);
      if (!created.ok()) return created.error();
      Engine& e = **created;
      auto pinned = pin_signed(e, setup.signer->verify(envelope));
      if (!pinned.ok()) return pinned.error();
      if (pinned->digest != r.anchor) return make_error("the re-verified envelope has another digest");
      auto c = run_request(e, r);
      if (!c.ok()) return c.error();
      restarted = std::move(*c);
    }
    ++out.compared;
    out.identical_across_requests += bitwise_equal(first, second) ? 1 : 0;
    out.identical_across_restart += bitwise_equal(first, restarted) ? 1 : 0;
  }
  return out;
}

Result<RevocationResult> measure_revocation(const BenchSetup& setup, const FunctionalOptions& o) {
  const Model& m = *setup.model;
  EngineConfig c = setup.engine;
  c.enable_prefix_caching = true;
  c.anchor_recheck = {};
  c.max_num_seqs = std::max(c.max_num_seqs, o.revocation_concurrency);
  auto created = Engine::create(m, c);
  if (!created.ok()) return created.error();
  Engine& e = **created;
  e.start();
  RevocationResult out;
  out.concurrency = o.revocation_concurrency;
  std::vector<double> steps, ms;
  Rng rng(setup.seed + 7);
  Status failure;
  for (int32_t i = 0; i < o.revocations && failure.ok(); ++i) {
    auto s = setup.signer->sign_and_verify(fact_sentence(static_cast<uint64_t>(i)) + " " + fact_sentence(i + 500),
                                           "revoke" + std::to_string(i));
    if (!s.ok()) {
      failure = s.error();
      break;
    }
    auto a = e.activate_anchor(s->digest, s->tokens).get();
    if (!a.ok()) {
      failure = a.error();
      break;
    }
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int32_t k = 0; k < o.revocation_concurrency; ++k) {
      GenerationRequest r;
      r.anchor = s->digest;
      r.prompt = encode(m, fact_probes(1 + k % 20).back().probes.front(), false);
      r.max_tokens = 100000;  // until the revocation ends it (or the model's context does)
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      streams.push_back(e.submit(std::move(r)));
    }
    // Wait until every request decodes, then a random 0-20 ms more: the revocation lands at a random point of a step.
    for (auto& st : streams) {
      StreamEvent ev;
      if (!st->next(&ev) || ev.kind != StreamEvent::Kind::kToken) {
        failure = make_error("a revocation-load request ended before its first token: " + ev.error);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng.next_u64() % 20000));
    e.revoke_anchor(s->digest);
    for (auto& st : streams) {
      StreamEvent ev;
      FinishReason last = FinishReason::kNone;
      while (st->next(&ev))
        if (ev.kind == StreamEvent::Kind::kFinished) last = ev.finish;
      out.requests_ended_revoked += last == FinishReason::kAnchorRevoked ? 1 : 0;
    }
    auto report = e.anchor_revocation(s->digest);
    if (!report) {
      failure = make_error("no revocation report for " + s->digest);
      break;
    }
    steps.push_back(static_cast<double>(report->steps_after_arrival()));
    out.max_steps_after_arrival = std::max(out.max_steps_after_arrival, report->steps_after_arrival());
    ms.push_back(report->arrival_to_last_attended_end_s * 1e3);
    ++out.revocations;
  }
  e.stop();
  if (!failure.ok()) return failure.error();
  out.steps_after_arrival = loadgen::summarize(steps);
  out.ms_to_last_attended = loadgen::summarize(ms);
  return out;
}

}  // namespace pagoda::anchorbench
