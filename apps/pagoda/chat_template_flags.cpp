#include "chat_template_flags.h"

#include <fstream>
#include <sstream>

namespace pagoda::cli {
namespace {

// Chat templates are a few KiB; the largest real ones are under 20 KiB.
constexpr std::streamoff kMaxTemplateFileBytes = 1 << 20;

Result<std::string> read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return make_error("--chat-template-file: cannot read " + path);
  const std::streamoff size = in.tellg();
  if (size > kMaxTemplateFileBytes)
    return make_error("--chat-template-file: " + path + " is larger than 1 MiB; that is no chat template");
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void add_chat_template_flags(CLI::App& cmd, ChatTemplateFlags& flags) {
  auto* name = cmd.add_option("--chat-template", flags.name,
                              "A built-in chat template family instead of the model's: chatml, llama-2, llama-3, "
                              "mistral, gemma, phi-3, zephyr")
                   ->check(CLI::IsMember({"chatml", "llama-2", "llama-3", "mistral", "gemma", "phi-3", "zephyr"}));
  cmd.add_option("--chat-template-file", flags.file, "A Jinja chat template instead of the model's")
      ->check(CLI::ExistingFile)
      ->excludes(name);
  cmd.add_option("--chat-template-kwargs", flags.kwargs,
                 "Extra template variables for every rendering, a JSON object (e.g. '{\"enable_thinking\": false}'); "
                 "a request's chat_template_kwargs override them");
}

Result<ChatPrompt> chat_prompt_for(const GgufFile& model, const Tokenizer& tokenizer, const ChatTemplateFlags& flags,
                                   std::string* how) {
  const std::string bos = bos_token_text(tokenizer), eos = eos_token_text(tokenizer);
  Result<ChatPrompt> chosen = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  if (!flags.name.empty()) {
    auto family = chat_template_from_name(flags.name);
    if (!family.ok()) return family.error();
    chosen = ChatPrompt::builtin(*family);
    *how = "from --chat-template";
  } else if (!flags.file.empty()) {
    auto source = read_template_file(flags.file);
    if (!source.ok()) return source.error();
    chosen = ChatPrompt::jinja(*source, bos, eos, flags.file);
    if (!chosen.ok()) return make_error("--chat-template-file: " + chosen.error().message);
    *how = "from --chat-template-file";
  } else {
    auto text = model.get_string_opt("tokenizer.chat_template");
    if (!text.ok() || !*text) {
      *how = "the default: the model has no tokenizer.chat_template";
    } else {
      chosen = ChatPrompt::jinja(**text, bos, eos, "the model's tokenizer.chat_template");
      if (chosen.ok()) {
        *how = "the model's own template";
      } else {
        bool recognised = false;
        const ChatTemplateFamily family = detect_chat_template(**text, &recognised);
        *how = chosen.error().message + "; using built-in " + chat_template_name(family) +
               (recognised ? ", whose markers it holds" : ", the default (use --chat-template or --chat-template-file)");
        chosen = ChatPrompt::builtin(family);
      }
    }
  }
  if (!flags.kwargs.empty()) {
    const auto kwargs = nlohmann::ordered_json::parse(flags.kwargs, nullptr, /*allow_exceptions=*/false);
    if (kwargs.is_discarded()) return make_error("--chat-template-kwargs is not valid JSON: " + flags.kwargs);
    if (Status st = chosen->set_default_kwargs(kwargs); !st.ok()) return st.error();
  }
  return chosen;
}

}  // namespace pagoda::cli
