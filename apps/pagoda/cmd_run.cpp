// pagoda run MODEL.gguf -p TEXT [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]
//            [--presence-penalty P] [--frequency-penalty F] [--seed S] [--format text|json] [--no-echo]
//            [--kv-cache-dtype f32|f16|bf16|q8_0] [--device cpu|cuda]
// pagoda run MODEL.gguf --chat [-p MESSAGE] [--system TEXT] [--chat-template NAME | --chat-template-file F]
//            [--chat-template-kwargs JSON] (and the sampling flags above)
// Without --chat the prompt is raw text, continued. With --chat it is a user's message: the conversation goes through
// the model's chat template and each reply ends at the end of the assistant's turn; without -p the user's messages
// are stdin's lines, one turn each, until its end (api/chat_session.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "api/chat_session.h"
#include "chat_template_flags.h"
#include "commands.h"
#include "default_model.h"
#include "engine_flags.h"
#include "engine/sequence_runner.h"
#include "model/model.h"
#include "tokenizer/streaming_detokenizer.h"

namespace pagoda::cli {
namespace {

constexpr int64_t kDefaultMaxContext = 4096;

struct RunOptions {
  std::string model_path;
  std::string prompt;
  bool has_prompt = false;
  int64_t n_predict = 128;
  bool has_n_predict = false;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::optional<uint64_t> seed;
  int64_t ctx_size = 0;
  std::string format = "text";
  int threads = 1;
  bool no_echo = false;
  std::string kv_cache_dtype = "f16";
  std::string device = "cpu";
  bool chat = false;
  std::string system;
  bool has_system = false;
  ChatTemplateFlags chat_template;
};

// The flags' sampling settings and token limit (in chat mode without -n: until the turn ends or the context does).
GenerateOptions generate_options(const RunOptions& o, int64_t n_ctx) {
  GenerateOptions gen;
  gen.max_new_tokens = o.chat && !o.has_n_predict ? n_ctx : o.n_predict;
  gen.sampling.temperature = o.temperature;
  gen.sampling.top_k = o.top_k;
  gen.sampling.top_p = o.top_p;
  gen.sampling.min_p = o.min_p;
  gen.sampling.repetition_penalty = o.repeat_penalty;
  gen.sampling.presence_penalty = o.presence_penalty;
  gen.sampling.frequency_penalty = o.frequency_penalty;
  gen.sampling.seed = o.seed ? *o.seed : std::random_device{}();
  return gen;
}

// Ctrl-C in a chat on stdin: while a reply is being generated it stops that reply (the conversation goes on, the
// partial reply in it); at the prompt it ends the process as usual. Lock-free atomics: safe in a signal handler.
std::atomic<bool> g_reply_running{false};
std::atomic<bool> g_stop_reply{false};

extern "C" void stop_reply_on_sigint(int) {
  if (g_reply_running.load()) {
    g_stop_reply.store(true);
    return;
  }
  std::signal(SIGINT, SIG_DFL);
  std::raise(SIGINT);
}

// --chat: one turn for -p, else one turn per line of stdin. Text: each reply on stdout as it is generated, then a
// newline; json: one object per turn.
int chat(const RunOptions& o, const Model& m, SequenceRunner& runner) {
  std::string how;
  auto prompt = chat_prompt_for(m.file(), m.tokenizer(), o.chat_template, &how);
  if (!prompt.ok()) return fail(prompt.error().message);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (o.has_system) messages.push_back({{"role", "system"}, {"content", o.system}});
  ChatSession session(runner, *prompt, messages);
  GenerateOptions gen = generate_options(o, runner.n_ctx());
  const bool stream_text = o.format == "text";
  const bool interactive = !o.has_prompt;
  const bool terminal = interactive && isatty(STDIN_FILENO);
  static_assert(std::atomic<bool>::is_always_lock_free);
  if (interactive) {
    gen.stop = &g_stop_reply;
    struct sigaction action = {};
    action.sa_handler = stop_reply_on_sigint;
    action.sa_flags = SA_RESTART;  // a reply's write to stdout, interrupted, goes on
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
  }
  if (terminal)
    std::fprintf(stderr, "pagoda: chat template %s (%s); a message a line, Ctrl-C stops a reply, Ctrl-D ends the chat\n",
                 prompt->describe().c_str(), how.c_str());
  int turns = 0, failed_turns = 0;
  std::string line;
  for (;;) {
    if (interactive) {
      if (terminal) {
        std::fputs("> ", stdout);
        std::fflush(stdout);
      }
      if (!std::getline(std::cin, line)) break;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
    } else {
      if (turns == 1) break;
      line = o.prompt;
    }
    ++turns;
    const auto start = std::chrono::steady_clock::now();
    g_stop_reply.store(false);
    g_reply_running.store(true);
    auto turn = session.reply(line, gen, [&](std::string_view piece) {
      if (!stream_text) return;
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    });
    g_reply_running.store(false);
    const bool stopped = g_stop_reply.exchange(false);
    if (!turn.ok()) {
      // On stdin a turn that fails (a message too long for the context, say) is reported and the conversation, left
      // as it was, goes on; the exit status still says so.
      failed_turns += fail(turn.error().message);
      if (!interactive) return 1;
      continue;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (stream_text) {
      std::fputc('\n', stdout);
      std::fflush(stdout);
    } else {
      nlohmann::ordered_json out = {{"prompt_ids", turn->prompt_ids}, {"ids", turn->ids},       {"text", turn->text},
                                    {"reused", turn->reused},         {"ended", turn->ended},
                                    {"dropped_messages", turn->dropped_messages}};
      std::printf("%s\n", json_line(out).c_str());
      std::fflush(stdout);
    }
    if (turn->dropped_messages > 0)
      std::fprintf(stderr,
                   "pagoda: the conversation outgrew the context of %lld tokens: its earliest %d messages were "
                   "dropped\n",
                   static_cast<long long>(runner.n_ctx()), turn->dropped_messages);
    const size_t evaluated = turn->prompt_ids.size() - static_cast<size_t>(turn->reused);
    std::fprintf(stderr,
                 "pagoda: %zu prompt tokens (%lld kept from the last turn), %zu generated in %.2f s (%.1f tok/s)%s\n",
                 turn->prompt_ids.size(), static_cast<long long>(turn->reused), turn->ids.size(), seconds,
                 seconds > 0 ? (evaluated + turn->ids.size()) / seconds : 0.0,
                 turn->ended       ? ""
                 : stopped         ? ": stopped by Ctrl-C (the partial reply stays in the conversation)"
                                   : ": stopped at the token limit (-n) or the context's end");
    // A reply that ran to the context's end without ending its turn is, for a small model, mostly a loop.
    if (!turn->ended && !stopped && !o.has_n_predict && gen.sampling.repetition_penalty == 1.0f)
      std::fprintf(stderr, "pagoda: the reply never ended its turn; a small model can repeat itself: -n caps a reply, "
                           "--repeat-penalty 1.1 discourages repeats\n");
  }
  if (interactive && turns == 0) return fail("--chat without -p: no message on stdin");
  return failed_turns > 0 ? 1 : 0;
}

int run(const RunOptions& o) {
  if (!(o.repeat_penalty > 0.0f)) return fail("--repeat-penalty must be > 0 (1 disables it)");
  if (!o.chat) {
    if (!o.has_prompt) return fail("--prompt is required (or --chat, to talk with the model a message a line)");
    if (o.has_system) return fail("--system needs --chat");
    if (!o.chat_template.name.empty() || !o.chat_template.file.empty() || !o.chat_template.kwargs.empty())
      return fail("--chat-template, --chat-template-file and --chat-template-kwargs need --chat");
  }
  auto model = Model::load(o.model_path);
  if (!model.ok()) return fail(model.error().message);
  const Model& m = **model;
  const Tokenizer& tok = m.tokenizer();
  // The default context is the model's, capped like llama.cpp's default so that a long-context model does
  // not reserve a huge KV cache for a short prompt.
  const int64_t n_ctx_train = m.hparams().n_ctx_train;
  if (o.ctx_size > n_ctx_train)
    return fail("--ctx-size " + std::to_string(o.ctx_size) + " exceeds the model's training context of " +
                std::to_string(n_ctx_train));
  const int64_t n_ctx = o.ctx_size > 0 ? o.ctx_size : std::min<int64_t>(n_ctx_train, kDefaultMaxContext);
  std::vector<int32_t> prompt_ids;
  if (!o.chat) {
    prompt_ids = tok.encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
    if (prompt_ids.empty()) return fail("the prompt is empty");
    if (static_cast<int64_t>(prompt_ids.size()) > n_ctx)
      return fail("the prompt has " + std::to_string(prompt_ids.size()) + " tokens, more than the context size of " +
                  std::to_string(n_ctx));
  } else if (o.has_prompt && o.prompt.empty()) {
    return fail("the message (-p) is empty");
  }

  auto kv_dtype = parse_kv_dtype(o.kv_cache_dtype);
  if (!kv_dtype.ok()) return fail("--kv-cache-dtype: " + kv_dtype.error().message);
  if (auto st = check_kv_head_dim(*kv_dtype, m.hparams().head_dim); !st.ok()) return fail(st.error().message);
  if (auto kv_bytes = ContiguousKvCache::check_size(m.hparams(), n_ctx, *kv_dtype); !kv_bytes.ok())
    return fail(kv_bytes.error().message);
  auto device = parse_device(o.device);
  if (!device.ok()) return fail("--device: " + device.error().message);
  ThreadPool pool(o.threads);
  auto made = SequenceRunner::create(m, pool, n_ctx, *kv_dtype, *device);
  if (!made.ok()) return fail(made.error().message);
  SequenceRunner& runner = **made;
  if (o.chat) return chat(o, m, runner);
  const GenerateOptions gen = generate_options(o, n_ctx);

  const bool stream_text = o.format == "text";
  // The prompt first, as llama.cpp's tools print it, so that the continuation reads as one text.
  if (stream_text && !o.no_echo) {
    std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
    std::fflush(stdout);
  }
  StreamingDetokenizer detok(tok);
  std::string text;
  const auto start = std::chrono::steady_clock::now();
  auto ids = o.n_predict == 0 ? Result<std::vector<int32_t>>(std::vector<int32_t>{})
                              : generate(runner, prompt_ids, gen, [&](int32_t id) {
                                  const std::string piece = detok.push(id);
                                  text += piece;
                                  if (stream_text) {
                                    std::fwrite(piece.data(), 1, piece.size(), stdout);
                                    std::fflush(stdout);
                                  }
                                });
  if (!ids.ok()) return fail(ids.error().message);
  const std::string rest = detok.flush();
  text += rest;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stream_text) {
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);  // the statistics line on stderr starts on a line of its own
    std::fflush(stdout);
  } else {
    nlohmann::ordered_json out = {{"prompt_ids", prompt_ids}, {"ids", *ids}, {"text", text}};
    std::printf("%s\n", json_line(out).c_str());
  }
  std::fprintf(stderr, "pagoda: %zu prompt tokens, %zu generated in %.2f s (%.1f tok/s)\n", prompt_ids.size(),
               ids->size(), seconds, seconds > 0 ? (prompt_ids.size() + ids->size()) / seconds : 0.0);
  // An instruct model given a question as raw text often ends it at once: say what it wanted.
  if (ids->size() == 1 && tok.is_end_of_generation(ids->front()))
    std::fprintf(stderr, "pagoda: the model ended the text at once; to send it a chat message through its chat "
                         "template, add --chat\n");
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streaming it to stdout");
  cmd->add_option("model", opts->model_path, "Model: a GGUF file or a Hugging Face folder (default: SmolLM2, see README)");
  auto* prompt = cmd->add_option("-p,--prompt", opts->prompt,
                                 "Prompt text (with --chat: the user's message; without it, stdin's lines)");
  auto* n_predict = cmd->add_option("-n,--n-predict", opts->n_predict,
                                    "Tokens to generate (default 128; with --chat: until the reply ends)")
                        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--temp", opts->temperature, "Sampling temperature; 0 is greedy (default 0.8)")
      ->check(finite_range(0.0, 100.0));
  cmd->add_option("--top-k", opts->top_k, "Keep the K most likely tokens; 0 keeps all (default 40)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--top-p", opts->top_p, "Nucleus sampling mass (default 0.95)")->check(finite_range(0.0, 1.0));
  cmd->add_option("--min-p", opts->min_p,
                  "Drop tokens less likely than this times the most likely one; 0 disables (default 0)")
      ->check(finite_range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", opts->repeat_penalty,
                  "Divide the positive logits (multiply the negative ones) of every token already in the prompt or "
                  "the output by this, once per token (as vLLM's repetition_penalty; llama.cpp's looks at the last 64 "
                  "tokens only); 1 disables (default 1)")
      ->check(finite_range(0.0, 100.0));
  cmd->add_option("--presence-penalty", opts->presence_penalty,
                  "Subtracted from the logit of every token already in the output (default 0)")
      ->check(finite_range(-2.0, 2.0));
  cmd->add_option("--frequency-penalty", opts->frequency_penalty,
                  "Subtracted from a token's logit once per time it is in the output (default 0)")
      ->check(finite_range(-2.0, 2.0));
  cmd->add_option("--seed", opts->seed, "Random seed (default: random)")->check(uint64_text());
  cmd->add_option("-c,--ctx-size", opts->ctx_size, "Context size in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  auto* no_echo =
      cmd->add_flag("--no-echo", opts->no_echo, "Print only the continuation, not the prompt before it (text format)");
  cmd->add_flag("--chat", opts->chat,
                "Chat: the prompt is a user's message, sent through the model's chat template; the reply ends with "
                "the assistant's turn. Without -p, a message per line of stdin, one conversation")
      ->excludes(no_echo);
  auto* system = cmd->add_option("--system", opts->system, "With --chat: the conversation's system message");
  add_chat_template_flags(*cmd, opts->chat_template);
  add_kv_cache_dtype_flag(*cmd, opts->kv_cache_dtype);
  add_device_flag(*cmd, opts->device);
  add_threads_flag(*cmd, opts->threads);
  cmd->callback([opts, &action, prompt, n_predict, system] {
    opts->has_prompt = prompt->count() > 0;
    opts->has_n_predict = n_predict->count() > 0;
    opts->has_system = system->count() > 0;
    action = [opts] {
      auto path = resolve_model_path(opts->model_path);  // no MODEL: the default model
      if (!path.ok()) return fail(path.error().message);
      opts->model_path = *path;
      return run(*opts);
    };
  });
}

}  // namespace pagoda::cli
