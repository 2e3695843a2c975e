// pagoda batch MODEL.gguf --input requests.jsonl --output results.jsonl [engine flags]
// Every request is submitted at once and runs through the continuous-batching engine. Output lines keep the
// input order: {"id", "prompt_ids", "ids", "text", "finish_reason"} (plus "choices" when n > 1 and "logprobs"
// when asked), or {"id", "error"} for a request that is invalid or can never fit the KV pool. A statistics line
// goes to stderr at the end.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include "anchor_setup.h"
#include "api/request_json.h"
#include "commands.h"
#include "default_model.h"
#include "util/json_depth.h"
#include "engine/engine.h"
#include "engine_flags.h"
#include "model/model.h"

namespace pagoda::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct BatchOptions {
  std::string model_path;
  std::string input_path;
  std::string output_path;
  EngineFlags engine;
  uint64_t seed = 0;
  std::string anchor_trust_root;
  std::vector<std::string> anchor_files;
  int32_t anchor_max_tokens = 512;
};

struct Choice {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason finish = FinishReason::kNone;
  std::string error;
  ojson logprobs = ojson::array();
  WarmStartUse warm_start = WarmStartUse::kOff;
  float warm_start_similarity = 0;
};

struct Pending {
  ojson id;                          // echoed as given (null when the line had none or was unreadable)
  std::optional<std::string> error;  // rejected before submission
  std::shared_ptr<RequestStream> stream;
  int32_t n = 1;
  bool want_logprobs = false;
};

ojson result_line(const Pending& p, const std::vector<Choice>& choices) {
  for (const Choice& c : choices)
    if (c.finish == FinishReason::kError) return ojson{{"id", p.id}, {"error", c.error}};
  auto choice_json = [&](const Choice& c, bool with_index, int32_t index) {
    ojson j;
    if (with_index) j["index"] = index;
    j["ids"] = c.ids;
    j["text"] = c.text;
    j["finish_reason"] = finish_reason_name(c.finish);
    if (p.want_logprobs) j["logprobs"] = c.logprobs;
    return j;
  };
  ojson out = {{"id", p.id}, {"prompt_ids", p.stream->prompt_ids()}};
  const ojson first = choice_json(choices[0], false, 0);
  for (auto it = first.begin(); it != first.end(); ++it) out[it.key()] = *it;
  if (choices[0].warm_start != WarmStartUse::kOff)  // only with --warm-start: whether the first token used it
    out["warm_start"] = {{"used", choices[0].warm_start == WarmStartUse::kHit},
                         {"similarity", choices[0].warm_start_similarity}};
  if (p.n > 1) {
    out["choices"] = ojson::array();
    for (int32_t i = 0; i < p.n; ++i) out["choices"].push_back(choice_json(choices[i], true, i));
  }
  return out;
}

int run_batch(const BatchOptions& o) {
  std::ifstream in(o.input_path, std::ios::binary);
  if (!in) return fail("cannot open --input file '" + o.input_path + "'");
  auto model = Model::load(o.model_path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  auto config = engine_config(o.engine, o.model_path);
  if (!config.ok()) return fail(config.error().message);
  config->seed = o.seed;
  if (Status st = attach_warm_start(o.engine, m, *config); !st.ok()) return fail(st.error().message);
  auto engine = Engine::create(m, *config);
  if (!engine.ok()) return fail(engine.error().message);
  if (o.anchor_trust_root.empty() && !o.anchor_files.empty()) return fail("--anchor needs --anchor-trust-root");
  std::FILE* out = std::fopen(o.output_path.c_str(), "wb");
  if (!out) return fail("cannot open --output file '" + o.output_path + "' for writing");
  std::fprintf(stderr, "pagoda: %s\n", (*engine)->describe().c_str());
  if (config->warm_start) std::fprintf(stderr, "pagoda: %s\n", config->warm_start->describe().c_str());

  // Read and submit everything first: the engine sees all requests at once.
  std::vector<Pending> pending;
  std::string line;
  int64_t line_no = 0;
  const auto start = std::chrono::steady_clock::now();
  (*engine)->start();
  std::unique_ptr<AnchorService> anchors;
  if (!o.anchor_trust_root.empty()) {
    auto started = start_anchor_service(AnchorSetup{o.anchor_trust_root, {}, o.anchor_files, o.anchor_max_tokens},
                                        o.model_path, m, **engine);
    if (!started.ok()) return fail(started.error().message);
    anchors = std::move(*started);
  }
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Pending p;
    nlohmann::json body;
    try {
      body = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      p.error = "line " + std::to_string(line_no) + " is not valid JSON";
      pending.push_back(std::move(p));
      continue;
    }
    if (body.is_object() && body.contains("id")) p.id = body["id"];
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto request = request_from_json(body, m.tokenizer(), &ordered);
    if (!request.ok()) {
      p.error = "line " + std::to_string(line_no) + ": " + request.error().message;
      pending.push_back(std::move(p));
      continue;
    }
    request->id = p.id.is_string() ? p.id.get<std::string>() : p.id.dump();
    if (!request->anchor.empty()) {
      // Unknown and inactive digests are the same error, as over HTTP.
      auto rec = anchors ? anchors->resolve_for_request(request->anchor, "")
                         : Result<AnchorRecord>(make_coded_error("anchor_not_found", "anchors are not enabled (--anchor-trust-root)"));
      if (!rec.ok()) {
        p.error = "line " + std::to_string(line_no) + ": anchor_not_found: " + rec.error().message;
        pending.push_back(std::move(p));
        continue;
      }
      anchors->count_request(request->anchor);
    }
    p.n = request->n;
    p.want_logprobs = request->logprobs >= 0;
    p.stream = (*engine)->submit(std::move(*request));
    pending.push_back(std::move(p));
  }

  int64_t errors = 0;
  for (Pending& p : pending) {
    ojson result;
    if (p.error) {
      result = ojson{{"id", p.id}, {"error", *p.error}};
    } else {
      std::vector<Choice> choices(p.n);
      StreamEvent ev;
      while (p.stream->next(&ev)) {
        Choice& c = choices[ev.index];
        c.text += ev.text;
        if (ev.kind == StreamEvent::Kind::kFinished) {
          c.finish = ev.finish;
          c.error = ev.error;
          continue;
        }
        if (c.ids.empty()) {
          c.warm_start = ev.warm_start;
          c.warm_start_similarity = ev.warm_start_similarity;
        }
        c.ids.push_back(ev.token);
        if (p.want_logprobs) {
          ojson top = ojson::array();
          for (const auto& t : ev.top_logprobs) top.push_back({t.id, t.logprob});
          c.logprobs.push_back({{"id", ev.token}, {"logprob", ev.logprob}, {"top", top}});
        }
      }
      result = result_line(p, choices);
    }
    if (result.contains("error")) ++errors;
    const std::string text = json_line(result) + "\n";
    if (std::fwrite(text.data(), 1, text.size(), out) != text.size()) {
      std::fclose(out);
      return fail("cannot write to '" + o.output_path + "'");
    }
  }
  (*engine)->stop();
  if (std::fclose(out) != 0) return fail("cannot write to '" + o.output_path + "'");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const EngineStats st = (*engine)->stats();
  ojson stats = {{"requests", pending.size()},
                 {"errors", errors},
                 {"steps", st.steps},
                 {"preemptions", st.preemptions},
                 {"prefix_cache_query_tokens", st.blocks.prefix_query_tokens},
                 {"prefix_cache_hit_tokens", st.blocks.prefix_hit_tokens},
                 {"peak_blocks_in_use", st.peak_used_blocks},
                 {"num_blocks", st.blocks.num_blocks},
                 {"block_size", st.block_size},
                 {"peak_seq_slack_slots", st.peak_seq_slack_slots},
                 {"prompt_tokens_computed", st.prompt_tokens_computed},
                 {"generated_tokens", st.generated_tokens},
                 {"seconds", seconds}};
  if (config->warm_start)
    stats["warm_start"] = {{"hits", st.warm_start.hits},
                           {"misses", st.warm_start.misses},
                           {"search_seconds", st.warm_start.search_s},
                           {"projection_seconds", st.warm_start.projection_s},
                           {"forward_seconds", st.warm_start.forward_s}};
  std::fprintf(stderr, "pagoda: stats %s\n", json_line(stats).c_str());
  return 0;
}

}  // namespace

void add_batch_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<BatchOptions>();
  CLI::App* cmd = app.add_subcommand("batch", "Run a file of requests through the continuous-batching engine");
  cmd->add_option("model", opts->model_path, "Model: a GGUF file or a Hugging Face folder (default: SmolLM2, see README)");
  cmd->add_option("--input", opts->input_path, "Requests, one JSON object per line")->required();
  cmd->add_option("--output", opts->output_path, "Results, one JSON object per line, in input order")->required();
  cmd->add_option("--seed", opts->seed, "Seeds the requests that bring none (default 0)")->check(uint64_text());
  cmd->add_option("--anchor-trust-root", opts->anchor_trust_root, "Enable verified anchors (see `serve`)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--anchor", opts->anchor_files,
                  "An anchor envelope to verify and activate first (repeatable); lines name it by \"anchor\": digest "
                  "(batch has no tenants: only anchors scoped \"*\" resolve)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--anchor-max-tokens", opts->anchor_max_tokens, "Most tokens an anchor may have (default 512)")
      ->check(CLI::Range(1, 1 << 20));
  add_engine_flags(*cmd, opts->engine);
  cmd->callback([opts, &action] {
    action = [opts] {
      auto path = resolve_model_path(opts->model_path);  // no MODEL: the default model
      if (!path.ok()) return fail(path.error().message);
      opts->model_path = *path;
      return run_batch(*opts);
    };
  });
}

}  // namespace pagoda::cli
