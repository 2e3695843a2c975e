// pagoda bench anchor-memory [MODEL] [--anchors 20] [--questions-per-anchor 10] [--modes ...]
//     [--layer-masks 0-14;15-29] [--rag-k 3] [--distractors 200] [--max-tokens 32] [--seed 1] [--format json]
// Is an anchor's content used? The memory task of anchorbench/memory_task.h asked in each mode of
// anchorbench/memory_eval.h, in-process, greedy; accuracy, counterfactual-following and answer log-probabilities
// with 95% intervals (docs/anchor-benchmark.md).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "anchor_cli_util.h"
#include "anchorbench/bench_anchor_signer.h"
#include "anchorbench/memory_eval.h"
#include "chat_template_flags.h"
#include "cmd_bench_anchor_memory.h"
#include "commands.h"
#include "default_model.h"
#include "engine_flags.h"
#include "kernels/cpu/matmul.h"
#include "model/model.h"

namespace pagoda::cli {
namespace {

using anchorbench::MemoryMode;
using anchorbench::MemoryModeResult;

struct MemoryCliOptions {
  std::string model_path;
  int32_t anchors = 20;
  int32_t questions_per_anchor = 10;
  int32_t distractors = 200;
  int32_t rag_k = 3;
  int32_t max_tokens = 32;
  uint64_t seed = 1;
  std::vector<std::string> modes = {"none", "text", "anchor", "anchor-layers", "anchor-system", "rag", "rag-user"};
  std::string layer_masks;  // empty: default_masks()
  std::string format = "text";
  ChatTemplateFlags chat_template;
  EngineFlags engine;
};

// "0-14;15-29;0-29:2": masks separated by ';', each a layer list (anchor_cli_util's parse_layer_list) or
// "LO-HI:STEP" (every STEP-th layer from LO to HI).
Result<std::vector<MemoryMode>> parse_masks(const std::string& text, int64_t n_layer) {
  std::vector<MemoryMode> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ';')) {
    if (part.empty()) continue;
    MemoryMode m;
    m.name = "anchor-layers";
    m.mask = part;
    const size_t colon = part.find(':');
    if (colon != std::string::npos) {
      auto range = parse_layer_list(part.substr(0, colon), n_layer, "--layer-masks");
      if (!range.ok()) return range.error();
      int step = 0;
      try {
        step = std::stoi(part.substr(colon + 1));
      } catch (const std::exception&) {
      }
      if (step < 1) return make_error("--layer-masks: '" + part + "' has no step of 1 or more after ':'");
      m.visible_layers.assign(n_layer, 0);
      int64_t seen = 0;
      for (int64_t l = 0; l < n_layer; ++l)
        if ((*range)[l]) m.visible_layers[l] = seen++ % step == 0;
    } else {
      auto layers = parse_layer_list(part, n_layer, "--layer-masks");
      if (!layers.ok()) return layers.error();
      m.visible_layers = std::move(*layers);
    }
    out.push_back(std::move(m));
  }
  if (out.empty()) return make_error("--layer-masks: no mask given");
  return out;
}

// The default grid for n layers: first half, second half, first third, last third, every other layer.
std::string default_masks(int64_t n) {
  const int64_t h = n / 2, t = n / 3;
  auto range = [](int64_t lo, int64_t hi) { return std::to_string(lo) + "-" + std::to_string(hi); };
  std::string s = range(0, std::max<int64_t>(0, h - 1)) + ";" + range(h, n - 1);
  if (t >= 1) s += ";" + range(0, t - 1) + ";" + range(n - t, n - 1);
  return s + ";" + range(0, n - 1) + ":2";
}

nlohmann::ordered_json proportion_json(const anchorbench::Proportion& p) {
  return {{"hits", p.hits}, {"n", p.n}, {"rate", p.rate}, {"ci95", {p.low, p.high}}};
}

nlohmann::ordered_json mode_json(const MemoryModeResult& r, const anchorbench::MemoryTask& task) {
  nlohmann::ordered_json j = {{"mode", r.mode.name}};
  if (!r.mode.mask.empty()) {
    int visible = 0;
    for (uint8_t v : r.mode.visible_layers) visible += v;
    j["mask"] = r.mode.mask;
    j["visible_layers"] = visible;
  }
  j["accuracy"] = proportion_json(r.accuracy);
  j["user_accuracy"] = proportion_json(r.user_accuracy);
  j["counterfactual_follow"] = proportion_json(r.counterfactual_follow);
  j["counterfactual_prior"] = proportion_json(r.counterfactual_prior);
  j["answer_logprob"] = {{"n", r.answer_logprob.n},
                         {"mean", r.answer_logprob.mean},
                         {"ci95", {r.answer_logprob.low, r.answer_logprob.high}}};
  if (r.retrieval_hits.n > 0) j["retrieval_hits"] = proportion_json(r.retrieval_hits);
  j["mean_prompt_tokens"] = r.mean_prompt_tokens;
  j["ttft_ms_median"] = r.ttft_ms_median;
  if (r.anchor_kv_bytes > 0) {
    j["anchor_kv_bytes"] = r.anchor_kv_bytes;
    j["anchor_kv_bytes_hidden"] = r.anchor_kv_bytes_hidden;
  }
  nlohmann::ordered_json answers = nlohmann::ordered_json::array();
  for (const auto& a : r.answers) {
    const auto& q = task.questions[a.question];
    answers.push_back({{"q", a.question},
                       {"anchor", q.anchor},
                       {"kind", q.kind},
                       {"question", q.question},
                       {"answer", q.answer},
                       {"output", a.output},
                       {"correct", a.correct},
                       {"prior", a.prior},
                       {"logprob", a.answer_logprob},
                       {"retrieved", a.retrieved}});
  }
  j["answers"] = std::move(answers);
  return j;
}

std::string percent(const anchorbench::Proportion& p) {
  if (p.n == 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%% [%.1f, %.1f]", 100 * p.rate, 100 * p.low, 100 * p.high);
  return buf;
}

int memory_command(const MemoryCliOptions& o) {
  auto path = resolve_model_path(o.model_path);
  if (!path.ok()) return fail(path.error().message);
  for (const std::string& m : o.modes)
    if (m != "none" && m != "text" && m != "anchor" && m != "anchor-layers" && m != "anchor-system" && m != "rag" &&
        m != "rag-user")
      return fail("--modes: '" + m + "' is not a mode (none, text, anchor, anchor-layers, anchor-system, rag, rag-user)");
  auto model = Model::load(*path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  std::string how;
  auto chat = chat_prompt_for(m.file(), m.tokenizer(), o.chat_template, &how);
  if (!chat.ok()) return fail(chat.error().message);
  auto config = engine_config(o.engine, *path);
  if (!config.ok()) return fail(config.error().message);
  auto signer = anchorbench::BenchAnchorSigner::create(*path, m);
  if (!signer.ok()) return fail(signer.error().message);
  anchorbench::MemoryTask task;
  try {
    task = anchorbench::make_memory_task(o.seed, o.anchors, o.questions_per_anchor, o.distractors);
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  std::vector<MemoryMode> modes;
  for (const std::string& name : o.modes) {
    if (name == "anchor-layers") {
      const int64_t n_layer = m.hparams().n_layer;
      auto masks = parse_masks(o.layer_masks.empty() ? default_masks(n_layer) : o.layer_masks, n_layer);
      if (!masks.ok()) return fail(masks.error().message);
      modes.insert(modes.end(), masks->begin(), masks->end());
    } else {
      modes.push_back({name, "", {}});
    }
  }
  anchorbench::MemoryEvalOptions opts;
  opts.max_tokens = o.max_tokens;
  opts.rag_k = o.rag_k;
  opts.engine = *config;
  const bool json = o.format == "json";
  std::fprintf(stderr, "pagoda: anchor memory task on %s: %zu anchors, %zu questions, chat template: %s, isa %s\n",
               path->c_str(), task.anchors.size(), task.questions.size(), chat->describe().c_str(),
               matmul_isa_name());
  std::vector<MemoryModeResult> results;
  for (const MemoryMode& mode : modes) {
    std::fprintf(stderr, "pagoda: mode %s%s%s\n", mode.name.c_str(), mode.mask.empty() ? "" : " ",
                 mode.mask.c_str());
    auto r = anchorbench::evaluate_memory_mode(m, *chat, *signer, task, mode, opts);
    if (!r.ok()) return fail(r.error().message);
    results.push_back(std::move(*r));
  }
  // Gate 0 for chat: anchor-system's sequences are text's tokens, so every reply and log-probability must be equal.
  int32_t gate0_equal = -1, gate0_n = 0;
  const MemoryModeResult* text_result = nullptr;
  for (const auto& r : results)
    if (r.mode.name == "text") text_result = &r;
  for (const auto& r : results) {
    if (r.mode.name != "anchor-system" || text_result == nullptr) continue;
    gate0_equal = 0;
    for (size_t i = 0; i < r.answers.size() && i < text_result->answers.size(); ++i) {
      ++gate0_n;
      gate0_equal += r.answers[i].output == text_result->answers[i].output &&
                     r.answers[i].answer_logprob == text_result->answers[i].answer_logprob;
    }
  }
  if (gate0_equal >= 0)
    std::fprintf(stderr, "pagoda: Gate 0: anchor-system equals text on %d of %d questions (reply and log-prob)\n",
                 gate0_equal, gate0_n);
  if (json) {
    nlohmann::ordered_json out = {{"model", *path},
                                  {"seed", o.seed},
                                  {"anchors", task.anchors.size()},
                                  {"questions", task.questions.size()},
                                  {"distractors", task.distractors.size()},
                                  {"rag_k", o.rag_k},
                                  {"max_tokens", o.max_tokens},
                                  {"match", "normalised answer as whole words in the normalised reply"},
                                  {"isa", matmul_isa_name()},
                                  {"threads", opts.engine.num_threads}};
    nlohmann::ordered_json anchors = nlohmann::ordered_json::array();
    for (const auto& a : task.anchors) anchors.push_back(a.text);
    out["anchor_texts"] = std::move(anchors);
    nlohmann::ordered_json rs = nlohmann::ordered_json::array();
    for (const auto& r : results) rs.push_back(mode_json(r, task));
    out["modes"] = std::move(rs);
    if (gate0_equal >= 0) out["gate0_anchor_system_equals_text"] = {{"equal", gate0_equal}, {"n", gate0_n}};
    std::printf("%s\n", out.dump(1).c_str());
    return gate0_equal >= 0 && gate0_equal != gate0_n ? 1 : 0;
  }
  std::printf("| mode | accuracy | user facts | counterfactual: follows anchor | counterfactual: true fact | answer "
              "log-prob (nats) | retrieved | prompt tokens | TTFT ms |\n|---|---|---|---|---|---|---|---:|---:|\n");
  for (const auto& r : results) {
    char lp[64];
    std::snprintf(lp, sizeof lp, "%.2f [%.2f, %.2f]", r.answer_logprob.mean, r.answer_logprob.low,
                  r.answer_logprob.high);
    const std::string name = r.mode.mask.empty() ? r.mode.name : r.mode.name + " " + r.mode.mask;
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %.0f | %.1f |\n", name.c_str(), percent(r.accuracy).c_str(),
                percent(r.user_accuracy).c_str(), percent(r.counterfactual_follow).c_str(),
                percent(r.counterfactual_prior).c_str(), lp, percent(r.retrieval_hits).c_str(), r.mean_prompt_tokens,
                r.ttft_ms_median);
  }
  return gate0_equal >= 0 && gate0_equal != gate0_n ? 1 : 0;
}

}  // namespace

void add_bench_anchor_memory_command(CLI::App& bench, Action& action) {
  auto o = std::make_shared<MemoryCliOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "anchor-memory", "Is an anchor's content used? A seeded memory task with counterfactual facts, per mode");
  cmd->footer(
      "Modes (where a question's facts are; docs/anchor-benchmark.md, section 2.6):\n"
      "  none           nowhere\n"
      "  text           the anchor's text as the system message\n"
      "  anchor         a verified anchor as pagoda serve serves one: plain text, BOS first, before the template\n"
      "  anchor-layers  the same anchor visible only to the layers of each --layer-masks entry\n"
      "  anchor-system  emulated: an anchor holding the templated system turn (must equal text bit for bit)\n"
      "  rag            BM25 over all anchors' facts and the distractors; the top --rag-k chunks as the system message\n"
      "  rag-user       the same, searched among the asking user's facts and the distractors only\n"
      "Exit status 1 when anchor-system and text both ran and differ (Gate 0).");
  cmd->add_option("model", o->model_path, "Model: a GGUF file or a Hugging Face folder (default: SmolLM2, see README)");
  cmd->add_option("--anchors", o->anchors, "Anchors (users), 1-30 (default 20)")->check(CLI::Range(1, 30));
  cmd->add_option("--questions-per-anchor", o->questions_per_anchor, "Questions per anchor, 1-10 (default 10)")
      ->check(CLI::Range(1, 10));
  cmd->add_option("--distractors", o->distractors, "Distractor chunks in the rag store (default 200)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--rag-k", o->rag_k, "Chunks the rag modes paste (default 3)")->check(CLI::Range(1, 64));
  cmd->add_option("--max-tokens", o->max_tokens, "Reply tokens (default 32)")->check(CLI::Range(1, 4096));
  cmd->add_option("--seed", o->seed, "Seed of the task (default 1)");
  cmd->add_option("--modes", o->modes, "none, text, anchor, anchor-layers, anchor-system, rag, rag-user (default: all)")
      ->delimiter(',');
  cmd->add_option("--layer-masks", o->layer_masks,
                  "anchor-layers: masks of the layers that see the anchor, ';'-separated, each '0-3,6' or "
                  "'LO-HI:STEP' (default: first half; second half; first third; last third; every other layer)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  add_chat_template_flags(*cmd, o->chat_template);
  add_engine_flags(*cmd, o->engine);
  cmd->callback([o, &action] { action = [o] { return memory_command(*o); }; });
}

}  // namespace pagoda::cli
