// pagoda template MODEL.gguf --messages FILE [--tools FILE] [--no-generation-prompt]
//                 [--chat-template NAME | --chat-template-file F] [--chat-template-kwargs JSON] [--now TIME]
// Prints the prompt the chat template renders for a conversation, byte for byte (no newline added), with the
// messages exactly as given: what jinja2 / transformers' apply_chat_template would print for the same template.
// FILE: a JSON list of messages, or an object with "messages" (and optionally "tools"); "-" reads stdin.
// Works on vocabulary-only GGUF files: only the metadata and the vocabulary are read.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "chat_template_flags.h"
#include "commands.h"
#include "model/hf_folder.h"

namespace pagoda::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct TemplateOptions {
  std::string model_path;
  std::string messages_path;
  std::string tools_path;
  bool no_generation_prompt = false;
  std::string now;  // "YYYY-MM-DDTHH:MM:SS": strftime_now's frozen clock
  ChatTemplateFlags chat_template;
};

Result<ojson> read_json_file(const std::string& path, const char* flag) {
  std::ostringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(std::string(flag) + ": cannot read " + path);
    ss << in.rdbuf();
  }
  ojson j = ojson::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(std::string(flag) + ": " + path + " is not valid JSON");
  return j;
}

Result<std::tm> parse_now(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail) != 6 || mo < 1 ||
      mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1900)
    return make_error("--now must be YYYY-MM-DDTHH:MM:SS, got '" + text + "'");
  return jinja::make_local_time(y, mo, d, h, mi, s);
}

int run(const TemplateOptions& o) {
  auto file = open_model_file(o.model_path);
  if (!file.ok()) return fail(file.error().message);
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return fail(o.model_path + ": " + tok.error().message);
  std::string how;
  auto prompt = chat_prompt_for(*file, **tok, o.chat_template, &how);
  if (!prompt.ok()) return fail(prompt.error().message);
  if (!o.now.empty()) {
    auto now = parse_now(o.now);
    if (!now.ok()) return fail(now.error().message);
    jinja::RenderOptions options;
    options.now = [t = *now] { return t; };
    prompt->set_render_options(options);
  }
  std::fprintf(stderr, "pagoda: chat template %s (%s)\n", prompt->describe().c_str(), how.c_str());

  auto messages = read_json_file(o.messages_path, "--messages");
  if (!messages.ok()) return fail(messages.error().message);
  ChatInput input;
  if (messages->is_object()) {
    if (!messages->contains("messages")) return fail("--messages: the object has no \"messages\" list");
    input.messages = (*messages)["messages"];
    if (messages->contains("tools")) input.tools = (*messages)["tools"];
  } else {
    input.messages = *messages;
  }
  if (!o.tools_path.empty()) {
    auto tools = read_json_file(o.tools_path, "--tools");
    if (!tools.ok()) return fail(tools.error().message);
    input.tools = *tools;
  }
  input.add_generation_prompt = !o.no_generation_prompt;
  auto text = prompt->render(input);
  if (!text.ok()) return fail(text.error().message);
  std::fwrite(text->data(), 1, text->size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : fail("cannot write the prompt to stdout");
}

}  // namespace

void add_template_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<TemplateOptions>();
  CLI::App* cmd = app.add_subcommand("template", "Print the prompt a chat template renders for a conversation");
  cmd->add_option("model", opts->model_path, "Model or vocabulary: a GGUF file or a Hugging Face folder")->required();
  cmd->add_option("--messages", opts->messages_path,
                  "JSON file: a list of messages, or {\"messages\": [...], \"tools\": [...]}; - for stdin")
      ->required();
  cmd->add_option("--tools", opts->tools_path, "JSON file: a list of tools (OpenAI's format)")->check(CLI::ExistingFile);
  cmd->add_flag("--no-generation-prompt", opts->no_generation_prompt,
                "Render with add_generation_prompt false (do not open the assistant's turn)");
  cmd->add_option("--now", opts->now,
                  "Freeze the clock strftime_now reads, YYYY-MM-DDTHH:MM:SS (default: the real local time)");
  add_chat_template_flags(*cmd, opts->chat_template);
  cmd->callback([opts, &action] { action = [opts] { return run(*opts); }; });
}

}  // namespace pagoda::cli
