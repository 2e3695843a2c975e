// pagoda tokenize FILE.gguf -p TEXT [--no-special] [--format json]; works on vocabulary-only files.
#include <cstdio>

#include "commands.h"
#include "model/hf_folder.h"
#include "io/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {
namespace {

struct TokenizeOptions {
  std::string path;
  std::string prompt;
  bool no_special = false;
  std::string format = "text";
};

int run(const TokenizeOptions& o) {
  auto file = open_model_file(o.path);
  if (!file.ok()) return fail(file.error().message);
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return fail(o.path + ": " + tok.error().message);
  // --no-special: neither add BOS/EOS nor parse special-token text, as llama.cpp's tokenizer tests do.
  const std::vector<int32_t> ids = (*tok)->encode(o.prompt, !o.no_special, !o.no_special);
  if (o.format == "json") {
    std::printf("%s\n", json_line(nlohmann::ordered_json{{"ids", ids}}).c_str());
  } else {
    for (int32_t id : ids) {
      nlohmann::ordered_json piece = (*tok)->token_text(id);
      std::printf("%6d -> %s\n", id, json_line(piece).c_str());
    }
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
  cmd->add_option("file", opts->path, "Model or vocabulary: a GGUF file or a Hugging Face folder")->required();
  cmd->add_option("-p,--prompt", opts->prompt, "Text to tokenize")->required();
  cmd->add_flag("--no-special", opts->no_special, "Add no BOS/EOS and do not parse special-token text");
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([opts, &action] { action = [opts] { return run(*opts); }; });
}

}  // namespace pagoda::cli
