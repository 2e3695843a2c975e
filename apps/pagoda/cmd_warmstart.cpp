// pagoda warmstart data|fit|library|eval: warm start (CP-KVP, docs/warm-start.md).
//   data    -o DIR [--task story|qa] [--seed S]  the generated data (train prompts and pairs, test pairs)
//   fit     MODEL --prompts P --pairs Q -o maps.safetensors [-m 16] [--form F] [--gamma G] [--target-features K]
//   library MODEL --maps M --prompts P -o DIR  summaries of earlier prompts, for serve/batch --warm-start-library
//   eval    MODEL --maps M [--maps M2] [--task story|qa] [--seed S | --test-pairs FILE] [--tau T] [--off] [--out DIR]
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

#include "commands.h"
#include "model/model.h"
#include "util/atomic_file.h"
#include "warmstart/eval_report.h"
#include "warmstart/evaluation.h"
#include "warmstart/fit.h"
#include "warmstart/kv_summary.h"
#include "warmstart/library.h"
#include "warmstart/paraphrase_data.h"
#include "warmstart/prompt_embedding.h"
#include "warmstart/prompt_state.h"
#include "warmstart/qa_data.h"

namespace pagoda::cli {
namespace {

using nlohmann::ordered_json;
using namespace pagoda::warmstart;

// Reads a JSONL file: one object per non-empty line; an error names the file and line.
Result<std::vector<ordered_json>> read_jsonl(const std::string& path) {
  auto text = read_small_file(path, 1ull << 30);
  if (!text.ok()) return text.error();
  std::vector<ordered_json> out;
  size_t line_no = 0, pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = ordered_json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return make_error(path + ":" + std::to_string(line_no) + ": not a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::string> string_field(const ordered_json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return make_error(where + ": field '" + key + "' must be a string");
  return it->get<std::string>();
}

// A progress bar on a terminal; elsewhere (logs, CI) only the final count.
void progress_line(const char* what, int64_t done, int64_t total) {
  if (!isatty(2)) {
    if (done == total) std::fprintf(stderr, "%s: %lld/%lld\n", what, static_cast<long long>(done), static_cast<long long>(total));
    return;
  }
  const int width = 30;
  const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld", what, std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), static_cast<long long>(done), static_cast<long long>(total));
  if (done == total) std::fputc('\n', stderr);
}

// The generated data of a task: "story" (story openings, stories260K's domain; every prompt ends a sentence) or
// "qa" (facts, then a question whose answer is the next token: qa_data.h).
PairSplit generate_task(const std::string& task, uint64_t seed, int instances) {
  if (task == "qa") {
    QaDataOptions q;
    q.seed = seed;
    q.instances_per_template = instances;
    return generate_qa_pairs(q);
  }
  DataOptions d;
  d.seed = seed;
  d.instances_per_template = instances;
  return generate_pairs(d);
}

// ---- data ----
struct DataCmd {
  std::string out, task = "story";
  uint64_t seed = 1;
  int instances = 10;
};

int run_data(const DataCmd& o) {
  const PairSplit split = generate_task(o.task, o.seed, o.instances);
  std::string prompts, pairs, test;
  int k = 0;
  for (const auto& p : split.train) {
    const std::string id = "t" + std::to_string(p.template_id) + "-i" + std::to_string(p.instance);
    prompts += json_line({{"id", id + "-s"}, {"text", p.source}}) + "\n";
    prompts += json_line({{"id", id + "-t"}, {"text", p.target}}) + "\n";
    pairs += json_line({{"source", id + "-s"}, {"target", id + "-t"}, {"adversarial", p.adversarial}}) + "\n";
    ++k;
  }
  for (const auto& p : split.test) {
    ordered_json j = {{"template", p.template_id}, {"instance", p.instance}, {"adversarial", p.adversarial},
                      {"source", p.source}, {"target", p.target}, {"continuation", p.continuation}};
    if (!p.answer.empty()) j["answer"] = p.answer;
    test += json_line(j) + "\n";
  }
  std::string distractors;
  for (const auto& d : split.distractors)
    distractors += json_line({{"text", d.text}, {"near_miss", d.near_miss}, {"for_pair", d.for_pair}}) + "\n";
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  for (const auto& [name, body] : std::map<std::string, std::string>{
           {"train-prompts.jsonl", prompts}, {"train-pairs.jsonl", pairs}, {"test-pairs.jsonl", test},
           {"library-distractors.jsonl", distractors}}) {
    Status st = write_file_atomically(o.out + "/" + name, body);
    if (!st.ok()) return fail(st.error().message);
  }
  std::fprintf(stderr, "pagoda: wrote %d train pairs, %zu test pairs and %zu library distractors (%s, seed %llu) to %s\n",
               k, split.test.size(), split.distractors.size(), o.task.c_str(), static_cast<unsigned long long>(o.seed),
               o.out.c_str());
  return 0;
}

// ---- fit ----
struct FitCmd {
  std::string model, prompts, pairs, out, form = "shared";
  int64_t m = 16, ref_positions = 16, target_features = 8;
  double gamma = 1e-2, value_ridge = 1e-3;
  int threads = 1;
};

Result<std::vector<TextPair>> read_pairs(const std::string& prompts_path, const std::string& pairs_path, bool train_only) {
  auto prompts = read_jsonl(prompts_path);
  if (!prompts.ok()) return prompts.error();
  std::map<std::string, std::string> text;
  for (size_t i = 0; i < prompts->size(); ++i) {
    const std::string where = prompts_path + ":" + std::to_string(i + 1);
    auto id = string_field((*prompts)[i], "id", where);
    auto t = string_field((*prompts)[i], "text", where);
    if (!id.ok()) return id.error();
    if (!t.ok()) return t.error();
    if (!text.emplace(*id, *t).second) return make_error(where + ": id '" + *id + "' repeats");
  }
  auto pairs = read_jsonl(pairs_path);
  if (!pairs.ok()) return pairs.error();
  std::vector<TextPair> out;
  for (size_t i = 0; i < pairs->size(); ++i) {
    const std::string where = pairs_path + ":" + std::to_string(i + 1);
    auto s = string_field((*pairs)[i], "source", where);
    auto t = string_field((*pairs)[i], "target", where);
    if (!s.ok()) return s.error();
    if (!t.ok()) return t.error();
    if (!text.count(*s) || !text.count(*t)) return make_error(where + ": names a prompt id that " + prompts_path + " lacks");
    auto adv = (*pairs)[i].find("adversarial");
    if (train_only && adv != (*pairs)[i].end() && adv->is_boolean() && adv->get<bool>()) continue;
    out.push_back({text[*s], text[*t]});
  }
  if (out.empty()) return make_error(pairs_path + ": no pairs");
  return out;
}

int run_fit(const FitCmd& o) {
  auto model = Model::load(o.model);
  if (!model.ok()) return fail(model.error().message);
  auto form = parse_projector_form(o.form);
  if (!form.ok()) return fail(form.error().message);
  // Adversarial pairs (a target that means something else) are not paraphrases: they are not fitted on.
  auto pairs = read_pairs(o.prompts, o.pairs, /*train_only=*/true);
  if (!pairs.ok()) return fail(pairs.error().message);
  FitOptions f;
  f.summary.m = o.m;
  f.summary.ref_positions = o.ref_positions;
  f.summary.value_ridge = o.value_ridge;
  f.form = *form;
  f.gamma = o.gamma;
  f.target_features = o.target_features;
  f.threads = o.threads;
  FitReport report;
  auto maps = fit_maps(**model, *pairs, f, report, [](int64_t d, int64_t t) { progress_line("fit", d, t); });
  if (!maps.ok()) return fail(maps.error().message);
  Status st = save_maps(o.out, *maps);
  if (!st.ok()) return fail(st.error().message);
  std::printf("%s\n", json_line({{"maps", o.out}, {"form", o.form}, {"m", o.m}, {"pairs_used", report.pairs_used},
                                 {"pairs_skipped", report.pairs_skipped},
                                 {"projector_params", maps->projector.param_count()},
                                 {"projector_bytes", maps->projector.param_count() * 4}, {"seconds", report.seconds}})
                          .c_str());
  return 0;
}

// ---- library ----
struct LibraryCmd {
  std::string model, maps, prompts, out, field = "text";
  int threads = 1;
};

int run_library(const LibraryCmd& o) {
  auto model = Model::load(o.model);
  if (!model.ok()) return fail(model.error().message);
  auto maps = load_maps(o.maps);
  if (!maps.ok()) return fail(maps.error().message);
  if (Status st = check_maps_fit_model(*maps, (*model)->hparams()); !st.ok()) return fail(st.error().message);
  auto prompts = read_jsonl(o.prompts);
  if (!prompts.ok()) return fail(prompts.error().message);
  ThreadPool pool(o.threads);
  TransformerWorkspace ws;
  WarmStartLibrary lib(std::numeric_limits<uint64_t>::max());
  int64_t skipped = 0;
  for (size_t i = 0; i < prompts->size(); ++i) {
    auto text = string_field((*prompts)[i], o.field.c_str(), o.prompts + ":" + std::to_string(i + 1));
    if (!text.ok()) return fail(text.error().message);
    const auto tokens = (*model)->tokenizer().encode(*text, true);
    auto state = run_prompt(**model, tokens, pool, ws);
    if (!state.ok()) return fail(state.error().message);
    auto summary = summarize_prefix((*model)->hparams(), *state, maps->summary);
    if (!summary.ok()) {
      ++skipped;
      continue;
    }
    lib.insert({tokens, embed_prompt(**model, tokens), std::move(*summary)});
    progress_line("library", static_cast<int64_t>(i + 1), static_cast<int64_t>(prompts->size()));
  }
  Status st = lib.save(o.out);
  if (!st.ok()) return fail(st.error().message);
  std::printf("%s\n", json_line({{"library", o.out}, {"entries", lib.size()}, {"skipped_too_short", skipped},
                                 {"bytes", lib.bytes()}})
                          .c_str());
  return 0;
}

// ---- eval ----
struct EvalCmd {
  std::string model, test_pairs, out, format = "text", task = "story", distractors = "all";
  std::vector<std::string> maps, methods;
  uint64_t seed = 1;
  int instances = 10;
  double tau = 0.9;
  bool off = false, search_scaling = false;
  int repeats = 3, threads = 1;
};

Result<std::vector<PromptPair>> read_test_pairs(const std::string& path) {
  auto rows = read_jsonl(path);
  if (!rows.ok()) return rows.error();
  std::vector<PromptPair> out;
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string where = path + ":" + std::to_string(i + 1);
    const auto& j = (*rows)[i];
    PromptPair p;
    auto s = string_field(j, "source", where), t = string_field(j, "target", where),
         c = string_field(j, "continuation", where);
    if (!s.ok()) return s.error();
    if (!t.ok()) return t.error();
    if (!c.ok()) return c.error();
    p.source = *s;
    p.target = *t;
    p.continuation = *c;
    if (auto it = j.find("template"); it != j.end() && it->is_number_integer()) p.template_id = it->get<int>();
    if (auto it = j.find("instance"); it != j.end() && it->is_number_integer()) p.instance = it->get<int>();
    if (auto it = j.find("adversarial"); it != j.end() && it->is_boolean()) p.adversarial = it->get<bool>();
    if (auto it = j.find("answer"); it != j.end()) {
      auto a = string_field(j, "answer", where);
      if (!a.ok()) return a.error();
      p.answer = *a;
    }
    out.push_back(std::move(p));
  }
  return out;
}

int run_eval(const EvalCmd& o) {
  auto model = Model::load(o.model);
  if (!model.ok()) return fail(model.error().message);
  std::vector<WarmStartMaps> maps;
  for (const auto& path : o.maps) {
    auto m = load_maps(path);
    if (!m.ok()) return fail(m.error().message);
    maps.push_back(std::move(*m));
  }
  std::vector<PromptPair> test;
  std::vector<LibraryDistractor> distractors;
  if (!o.test_pairs.empty()) {
    auto t = read_test_pairs(o.test_pairs);
    if (!t.ok()) return fail(t.error().message);
    test = std::move(*t);
  } else {
    PairSplit split = generate_task(o.task, o.seed, o.instances);
    test = std::move(split.test);
    for (auto& d : split.distractors)
      if (o.distractors == "all" || (o.distractors == "unrelated" && !d.near_miss)) distractors.push_back(std::move(d));
  }
  EvalOptions e;
  e.tau = o.tau;
  e.warm_start_off = o.off;
  e.timing_repeats = o.repeats;
  e.threads = o.threads;
  e.methods = o.methods;
  auto result =
      evaluate(**model, test, distractors, maps, e, [](int64_t d, int64_t t) { progress_line("eval", d, t); });
  if (!result.ok()) return fail(result.error().message);
  ordered_json summary = summarize_eval(*result, o.tau, e.quality_tokens);
  summary["model"] = o.model;
  summary["task"] = o.test_pairs.empty() ? o.task : "test-pairs file";
  summary["distractors"] = o.test_pairs.empty() ? o.distractors : "none";
  if (o.search_scaling)
    for (const SearchScaling& r : measure_search_scaling((*model)->hparams().n_embd, {1000, 10000, 100000}))
      summary["search_scaling"].push_back({{"entries", r.entries}, {"exact_ms", r.exact_ms},
                                           {"hnsw_build_s", r.index_build_s}, {"hnsw_ms", r.approximate_ms},
                                           {"hnsw_recall_at_1", r.recall_at_1}});
  summary["warm_start"] = o.off ? "off" : "on";
  if (!o.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out, ec);
    std::string lines;
    for (const auto& r : result->requests) lines += json_line(request_json(r)) + "\n";
    for (const auto& [name, body] : std::map<std::string, std::string>{
             {"requests.jsonl", lines},
             {"summary.json", summary.dump(2) + "\n"},
             {"plots.svg", eval_plots_svg(*result, "pagoda warmstart eval: " + o.model)}}) {
      Status st = write_file_atomically(o.out + "/" + name, body);
      if (!st.ok()) return fail(st.error().message);
    }
  }
  if (o.format == "json") {
    std::printf("%s\n", json_line(summary).c_str());
    return 0;
  }
  std::printf("requests %zu (skipped %lld), high-similarity (cos > 0.9) %zu, hits at tau %.2f: %zu\n",
              result->requests.size(), static_cast<long long>(result->skipped),
              summary["high_similarity_requests"].get<size_t>(), o.tau, summary["hits"].get<size_t>());
  const bool answers = summary["cold_answer_accuracy"]["n"].get<int>() > 0;
  if (answers)
    std::printf("cold answer accuracy %.3f [%.3f, %.3f] over %d questions\n",
                summary["cold_answer_accuracy"]["rate"].get<double>(), summary["cold_answer_accuracy"]["low"].get<double>(),
                summary["cold_answer_accuracy"]["high"].get<double>(), summary["cold_answer_accuracy"]["n"].get<int>());
  std::printf("%-26s %10s %10s %8s %10s %10s %10s%s\n", "method (all requests)", "KL(m||c)", "KL(c||m)", "top-1",
              "TTFT ms", "TTFT cut", "16-tok agr", answers ? "   accuracy [95% CI]" : "");
  for (const auto& m : result->methods) {
    const auto& s = summary["methods"][m]["all"];
    std::printf("%-26s %10.4f %10.4f %8.3f %10.3f %9.1f%% %10.3f", m.c_str(), s["kl_method_cold"]["mean"].get<double>(),
                s["kl_cold_method"]["mean"].get<double>(), s["top1_agreement"].get<double>(),
                s["ttft_ms_median"].get<double>(), 100 * s["ttft_reduction_mean"].get<double>(),
                s["first_tokens_agreement"].get<double>());
    if (answers)
      std::printf("   %.3f [%.3f, %.3f]", s["answer_accuracy"]["rate"].get<double>(),
                  s["answer_accuracy"]["low"].get<double>(), s["answer_accuracy"]["high"].get<double>());
    std::printf("\n");
  }
  if (summary.contains("criteria"))
    for (const auto& [form, c] : summary["criteria"].items())
      for (const auto& [name, v] : c.items())
        std::printf("criterion %-28s %-22s value %.4f: %s\n", name.c_str(), form.c_str(), v["value"].get<double>(),
                    v["verdict"].get<std::string>().c_str());
  return 0;
}

}  // namespace

void add_warmstart_command(CLI::App& app, Action& action) {
  CLI::App* ws = app.add_subcommand("warmstart", "Warm start (CP-KVP): data, fitting, library and evaluation");
  ws->require_subcommand(1, 1);
  {
    auto o = std::make_shared<DataCmd>();
    CLI::App* c = ws->add_subcommand("data", "Write the generated paraphrase data (train prompts/pairs, test pairs)");
    c->add_option("-o,--output", o->out, "Output folder")->required();
    c->add_option("--task", o->task, "story (story openings) or qa (a question whose answer is in the prompt)")
        ->check(CLI::IsMember({"story", "qa"}));
    c->add_option("--seed", o->seed, "Generator seed (default 1)");
    c->add_option("--instances", o->instances, "Paraphrase pairs per template (default 10)")->check(CLI::Range(1, 1000));
    c->callback([o, &action] { action = [o] { return run_data(*o); }; });
  }
  {
    auto o = std::make_shared<FitCmd>();
    CLI::App* c = ws->add_subcommand("fit", "Fit the summary projector on paraphrase pairs (ridge regression)");
    c->add_option("model", o->model, "Model (.gguf or Hugging Face folder)")->required();
    c->add_option("--prompts", o->prompts, "JSONL of {\"id\", \"text\"}")->required()->check(CLI::ExistingFile);
    c->add_option("--pairs", o->pairs, "JSONL of {\"source\": id, \"target\": id}")->required()->check(CLI::ExistingFile);
    c->add_option("-o,--output", o->out, "Output maps (.safetensors)")->required();
    c->add_option("-m,--slots", o->m, "Summary slots per layer and KV head (default 16)")->check(CLI::Range(1, 4096));
    c->add_option("--ref-positions", o->ref_positions, "Reference query positions R (default 16)")->check(CLI::Range(1, 4096));
    c->add_option("--form", o->form,
                  "Projector form: shared (default), block-diagonal, slot-mixing (the seed's M*S), target-aware "
                  "(shared plus the prompts' embedding difference) or identity");
    c->add_option("--target-features", o->target_features,
                  "target-aware: principal directions of the embedding difference it reads (default 8)")
        ->check(CLI::Range(1, 4096));
    c->add_option("--gamma", o->gamma, "Ridge strength toward the identity map (default 0.01)")->check(finite_range(0, 1e12));
    c->add_option("--value-ridge", o->value_ridge, "Ridge of the summary's value solve (default 0.001)")->check(finite_range(0, 1e6));
    add_threads_flag(*c, o->threads);
    c->callback([o, &action] { action = [o] { return run_fit(*o); }; });
  }
  {
    auto o = std::make_shared<LibraryCmd>();
    CLI::App* c = ws->add_subcommand("library", "Summarise prompts into a warm-start library folder");
    c->add_option("model", o->model, "Model (.gguf or Hugging Face folder)")->required();
    c->add_option("--maps", o->maps, "Maps from `warmstart fit` (their summary settings)")->required()->check(CLI::ExistingFile);
    c->add_option("--prompts", o->prompts, "JSONL, one prompt per line")->required()->check(CLI::ExistingFile);
    c->add_option("--field", o->field, "The field holding the prompt's text (default text)");
    c->add_option("-o,--output", o->out, "Output folder")->required();
    add_threads_flag(*c, o->threads);
    c->callback([o, &action] { action = [o] { return run_library(*o); }; });
  }
  {
    auto o = std::make_shared<EvalCmd>();
    CLI::App* c = ws->add_subcommand("eval", "The falsification harness: every method and baseline against cold");
    c->add_option("model", o->model, "Model (.gguf or Hugging Face folder)")->required();
    c->add_option("--maps", o->maps, "Maps from `warmstart fit` (repeat to compare forms)")->required()->check(CLI::ExistingFile);
    c->add_option("--task", o->task, "Generated test split: story (default) or qa (answers, accuracy, distractors)")
        ->check(CLI::IsMember({"story", "qa"}));
    c->add_option("--distractors", o->distractors,
                  "qa: library entries beside the sources: all (unrelated and near misses, default), unrelated or none")
        ->check(CLI::IsMember({"all", "unrelated", "none"}));
    c->add_option("--seed", o->seed, "Generator seed of the test split (default 1)");
    c->add_option("--instances", o->instances, "Paraphrase pairs per template (default 10)")->check(CLI::Range(1, 1000));
    c->add_option("--test-pairs", o->test_pairs, "JSONL test pairs instead (source, target, continuation[, answer])")->check(CLI::ExistingFile);
    c->add_option("--tau", o->tau, "Similarity threshold of the served method (default 0.9)")->check(finite_range(-1, 2));
    c->add_flag("--search-scaling", o->search_scaling,
                "Also time exact and HNSW search over 1k, 10k and 100k random embeddings of the model's width");
    c->add_flag("--off", o->off, "Warm start off: `served` is always cold (its KL must be 0)");
    c->add_option("--methods", o->methods,
                  "Methods to run (comma-separated; default all): served, projected (every maps file's form), "
                  "no-projection, oracle-summary, oracle-summary:R=1, neighbour-kv, neighbour-kv-blend, "
                  "response-cache, no-cache, prefix-cache. The cold reference always runs")
        ->delimiter(',')
        ->check(CLI::IsMember(kEvalMethods));
    c->add_option("--repeats", o->repeats, "Timings per request and method, median (default 3)")->check(CLI::Range(1, 100));
    c->add_option("--format", o->format, "text or json")->check(CLI::IsMember({"text", "json"}));
    c->add_option("--out", o->out, "Folder for requests.jsonl, summary.json and plots.svg");
    add_threads_flag(*c, o->threads);
    c->callback([o, &action] { action = [o] { return run_eval(*o); }; });
  }
}

}  // namespace pagoda::cli
