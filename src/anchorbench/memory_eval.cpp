#include "anchorbench/memory_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "anchorbench/bm25.h"
#include "kv/kv_dtype.h"

namespace pagoda::anchorbench {
namespace {

using MonoClock = std::chrono::steady_clock;

// What one question sends: the prompt (after the anchor in anchor modes) and the anchor's digest.
struct QuestionPrompt {
  std::vector<int32_t> tokens;
  std::string anchor;
  bool retrieved = false;
  int32_t anchor_tokens = 0;
};

Result<std::vector<int32_t>> chat_tokens(const Model& m, const ChatPrompt& chat, const std::string& system,
                                         const std::string& question, bool after_anchor) {
  ChatInput in;
  if (!system.empty()) in.messages.push_back({{"role", "system"}, {"content", system}});
  in.messages.push_back({{"role", "user"}, {"content", question}});
  auto text = chat.render(in);
  if (!text.ok()) return text.error();
  std::vector<int32_t> tokens = tokenize_chat_prompt(*text, m.tokenizer());
  // After an anchor the prompt carries no BOS of its own, as the server strips it.
  const Tokenizer& tok = m.tokenizer();
  if (after_anchor && tok.add_bos() && tok.bos() && !tokens.empty() && tokens[0] == *tok.bos())
    tokens.erase(tokens.begin());
  if (tokens.empty()) return make_error("the templated question is empty");
  return tokens;
}

double log_softmax_at(std::span<const float> logits, int32_t id) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  return static_cast<double>(logits[id]) - mx - std::log(sum);
}

GenerationRequest base_request(const QuestionPrompt& p) {
  GenerationRequest r;
  r.prompt = p.tokens;
  r.anchor = p.anchor;
  r.sampling.temperature = 0.0f;
  r.seed = 1;
  return r;
}

// Submits every request, runs the engine dry, and returns each request's events.
Result<std::vector<std::vector<StreamEvent>>> run_all(Engine& e, std::vector<GenerationRequest> requests) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  streams.reserve(requests.size());
  for (auto& r : requests) streams.push_back(e.submit(std::move(r)));
  e.run_until_idle();
  std::vector<std::vector<StreamEvent>> out(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    StreamEvent ev;
    while (streams[i]->try_next(&ev)) {
      if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError)
        return make_error("a memory-task request failed: " + ev.error);
      out[i].push_back(std::move(ev));
    }
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Result<MemoryModeResult> evaluate_memory_mode(const Model& model, const ChatPrompt& chat, BenchAnchorSigner& signer,
                                              const MemoryTask& task, const MemoryMode& mode,
                                              const MemoryEvalOptions& options) {
  const bool system_anchor = mode.name == "anchor-system";
  const bool anchored = mode.name == "anchor" || mode.name == "anchor-layers" || system_anchor;
  const bool rag = mode.name == "rag" || mode.name == "rag-user";
  if (!anchored && !rag && mode.name != "none" && mode.name != "text")
    return make_error("unknown memory-task mode '" + mode.name +
                      "' (none, text, anchor, anchor-layers, anchor-system, rag, rag-user)");
  const ModelHParams& hp = model.hparams();
  if (mode.name == "anchor-layers" && static_cast<int64_t>(mode.visible_layers.size()) != hp.n_layer)
    return make_error("anchor-layers needs one visibility flag per layer");
  MemoryModeResult result;
  result.mode = mode;
  EngineConfig config = options.engine;
  config.enable_prefix_caching = true;
  auto created = Engine::create(model, config);
  if (!created.ok()) return created.error();
  Engine& e = **created;

  // Anchors: signed, verified and pinned before anything is timed (that is what an anchor is for).
  std::vector<SignedAnchor> pinned(task.anchors.size());
  if (anchored) {
    AnchorServing serving;
    if (mode.name == "anchor-layers") serving.visible_layers = mode.visible_layers;
    int64_t hidden_layers = 0;
    for (uint8_t v : serving.visible_layers) hidden_layers += v == 0;
    const int64_t token_bytes = 2 * kv_bytes(config.kv_cache_dtype, hp.kv_dim());  // K and V, one layer
    for (size_t a = 0; a < task.anchors.size(); ++a) {
      Result<SignedAnchor> s = SignedAnchor{};
      if (system_anchor) {
        // The longest token prefix shared by this anchor's questions rendered with its facts as the system turn.
        std::vector<int32_t> common;
        bool first = true;
        for (const MemoryQuestion& q : task.questions) {
          if (q.anchor != static_cast<int32_t>(a)) continue;
          auto t = chat_tokens(model, chat, task.anchors[a].text, q.question, false);
          if (!t.ok()) return t.error();
          if (first) {
            common = std::move(*t);
            first = false;
          } else {
            size_t k = 0;
            while (k < common.size() && k < t->size() && common[k] == (*t)[k]) ++k;
            common.resize(k);
          }
        }
        if (common.empty()) return make_error("anchor-system: the questions share no templated prefix");
        s->digest = "memory-system/" + std::to_string(a);  // unsigned: see the header
        s->tokens = std::move(common);
      } else {
        s = signer.sign_and_verify(task.anchors[a].text, "memory/" + std::to_string(a));
      }
      if (!s.ok()) return s.error();
      auto f = e.activate_anchor(s->digest, s->tokens, serving);
      e.step();
      auto activated = f.get();
      if (!activated.ok()) return activated.error();
      pinned[a] = std::move(*s);
      result.anchor_kv_bytes += static_cast<int64_t>(pinned[a].tokens.size()) * hp.n_layer * token_bytes;
      result.anchor_kv_bytes_hidden += static_cast<int64_t>(pinned[a].tokens.size()) * hidden_layers * token_bytes;
    }
  }

  // The rag store: every anchor's facts (owner: the anchor) and the distractors (owner -1).
  std::vector<std::string> chunks;
  std::vector<int32_t> owner;
  for (size_t a = 0; a < task.anchors.size(); ++a)
    for (const std::string& f : task.anchors[a].facts) {
      chunks.push_back(f);
      owner.push_back(static_cast<int32_t>(a));
    }
  for (const std::string& d : task.distractors) {
    chunks.push_back(d);
    owner.push_back(-1);
  }
  const Bm25Index index(chunks);

  std::vector<QuestionPrompt> prompts(task.questions.size());
  for (size_t i = 0; i < task.questions.size(); ++i) {
    const MemoryQuestion& q = task.questions[i];
    QuestionPrompt& p = prompts[i];
    std::string system;
    if (mode.name == "text") system = task.anchors[q.anchor].text;
    if (rag) {
      std::vector<uint8_t> allowed;
      if (mode.name == "rag-user") {
        allowed.resize(chunks.size());
        for (size_t c = 0; c < chunks.size(); ++c) allowed[c] = owner[c] == q.anchor || owner[c] == -1;
      }
      system = "Memory about the user and the world.";
      for (const auto& hit : index.search(q.question, options.rag_k, allowed)) {
        system += "\n" + chunks[hit.document];
        p.retrieved = p.retrieved || (owner[hit.document] == q.anchor && answer_matches(chunks[hit.document], q.answer));
      }
    }
    if (system_anchor) {  // the text mode's tokens after the pinned prefix
      auto full = chat_tokens(model, chat, task.anchors[q.anchor].text, q.question, false);
      if (!full.ok()) return full.error();
      const std::vector<int32_t>& prefix = pinned[q.anchor].tokens;
      if (full->size() <= prefix.size() || !std::equal(prefix.begin(), prefix.end(), full->begin()))
        return make_error("anchor-system: a question does not start with its anchor's tokens");
      p.tokens.assign(full->begin() + static_cast<std::ptrdiff_t>(prefix.size()), full->end());
      p.anchor = pinned[q.anchor].digest;
      p.anchor_tokens = static_cast<int32_t>(prefix.size());
      continue;
    }
    auto tokens = chat_tokens(model, chat, system, q.question, anchored);
    if (!tokens.ok()) return tokens.error();
    p.tokens = std::move(*tokens);
    if (anchored) {
      p.anchor = pinned[q.anchor].digest;
      p.anchor_tokens = static_cast<int32_t>(pinned[q.anchor].tokens.size());
    }
  }

  // TTFT: the first question of each anchor alone, before the batch below warms the prefix cache; after one
  // unrelated request has warmed the engine's buffers and the pages of the weights.
  {
    auto warm = chat_tokens(model, chat, "", "Hello.", false);
    if (!warm.ok()) return warm.error();
    QuestionPrompt w;
    w.tokens = std::move(*warm);
    GenerationRequest r = base_request(w);
    r.max_tokens = 2;
    auto events = run_all(e, {std::move(r)});
    if (!events.ok()) return events.error();
  }
  std::vector<double> ttft_ms;
  for (size_t i = 0; i < task.questions.size(); ++i) {
    if (i > 0 && task.questions[i - 1].anchor == task.questions[i].anchor) continue;
    GenerationRequest r = base_request(prompts[i]);
    r.max_tokens = 1;
    const auto t0 = MonoClock::now();
    auto stream = e.submit(std::move(r));
    StreamEvent ev;
    bool first = false;
    while (!first) {
      const bool busy = e.step();
      while (stream->try_next(&ev)) {
        if (ev.kind == StreamEvent::Kind::kToken) first = true;
        if (ev.kind == StreamEvent::Kind::kFinished && ev.finish == FinishReason::kError)
          return make_error("a memory-task request failed: " + ev.error);
      }
      if (!busy && !first) return make_error("a memory-task request produced no token");
    }
    ttft_ms.push_back(std::chrono::duration<double, std::milli>(MonoClock::now() - t0).count());
    e.run_until_idle();
  }
  result.ttft_ms_median = median(ttft_ms);

  // The replies and the answers' log-probabilities, in batches of questions (continuous batching inside each).
  constexpr size_t kBatchQuestions = 40;
  for (size_t b0 = 0; b0 < task.questions.size(); b0 += kBatchQuestions) {
    const size_t b1 = std::min(task.questions.size(), b0 + kBatchQuestions);
    std::vector<GenerationRequest> requests;
    std::vector<std::vector<int32_t>> answer_ids(b1 - b0);
    for (size_t i = b0; i < b1; ++i) {
      GenerationRequest gen = base_request(prompts[i]);
      gen.max_tokens = options.max_tokens;
      requests.push_back(std::move(gen));
      answer_ids[i - b0] = model.tokenizer().encode(task.questions[i].answer, false, false);
      for (size_t k = 0; k < answer_ids[i - b0].size(); ++k) {  // teacher-forced: the answer's first k tokens given
        GenerationRequest lp = base_request(prompts[i]);
        lp.prompt.insert(lp.prompt.end(), answer_ids[i - b0].begin(), answer_ids[i - b0].begin() + static_cast<std::ptrdiff_t>(k));
        lp.max_tokens = 1;
        lp.ignore_eos = true;
        lp.return_logits = true;
        requests.push_back(std::move(lp));
      }
    }
    auto events = run_all(e, std::move(requests));
    if (!events.ok()) return events.error();
    size_t at = 0;
    for (size_t i = b0; i < b1; ++i) {
      const MemoryQuestion& q = task.questions[i];
      MemoryAnswer ans;
      ans.question = static_cast<int32_t>(i);
      for (const StreamEvent& ev : (*events)[at])
        if (ev.kind == StreamEvent::Kind::kToken) ans.output += ev.text;
      ++at;
      for (int32_t id : answer_ids[i - b0]) {
        const auto& evs = (*events)[at++];
        if (evs.empty() || evs.front().kind != StreamEvent::Kind::kToken || evs.front().logits.empty())
          return make_error("a teacher-forced request returned no logits");
        ans.answer_logprob += log_softmax_at(evs.front().logits, id);
      }
      ans.correct = answer_matches(ans.output, q.answer);
      ans.prior = !q.prior_answer.empty() && answer_matches(ans.output, q.prior_answer);
      ans.retrieved = prompts[i].retrieved;
      ans.prompt_tokens = static_cast<int32_t>(prompts[i].tokens.size()) + prompts[i].anchor_tokens;
      result.answers.push_back(std::move(ans));
    }
  }

  int32_t correct = 0, user_n = 0, user_hits = 0, cf_n = 0, cf_follow = 0, cf_prior = 0, retrieved = 0;
  std::vector<double> logprobs;
  double prompt_tokens = 0;
  for (const MemoryAnswer& a : result.answers) {
    const MemoryQuestion& q = task.questions[a.question];
    correct += a.correct;
    if (q.kind == "counterfactual") {
      ++cf_n;
      cf_follow += a.correct;
      cf_prior += a.prior;
    } else {
      ++user_n;
      user_hits += a.correct;
    }
    retrieved += a.retrieved;
    logprobs.push_back(a.answer_logprob);
    prompt_tokens += a.prompt_tokens;
  }
  const int32_t n = static_cast<int32_t>(result.answers.size());
  result.accuracy = wilson_proportion(correct, n);
  result.user_accuracy = wilson_proportion(user_hits, user_n);
  result.counterfactual_follow = wilson_proportion(cf_follow, cf_n);
  result.counterfactual_prior = wilson_proportion(cf_prior, cf_n);
  result.answer_logprob = mean_interval(logprobs);
  if (rag) result.retrieval_hits = wilson_proportion(retrieved, n);
  result.mean_prompt_tokens = n ? prompt_tokens / n : 0;
  return result;
}

}  // namespace pagoda::anchorbench
