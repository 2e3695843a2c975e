// The chat-template flags shared by `serve` and `template`: which template turns messages into the prompt, and
// the template variables every rendering gets.
//   --chat-template NAME        a built-in family (chatml, llama-2, llama-3, mistral, gemma, phi-3, zephyr)
//   --chat-template-file F      any Jinja file
//   --chat-template-kwargs JSON an object of extra template variables ({"enable_thinking": false})
// Without the first two, the model's own tokenizer.chat_template (rendered by src/jinja); a model without one gets
// built-in chatml, as llama.cpp's server does.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "api/chat_prompt.h"
#include "io/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda::cli {

struct ChatTemplateFlags {
  std::string name;
  std::string file;
  std::string kwargs;
};

void add_chat_template_flags(CLI::App& cmd, ChatTemplateFlags& flags);

// The chat prompt the flags and the model choose; *how says which and why. Errors: both --chat-template and
// --chat-template-file, an unreadable or uncompilable --chat-template-file, bad --chat-template-kwargs. A model
// template that does not compile is not an error: the family its markers name is used instead, and *how says so.
Result<ChatPrompt> chat_prompt_for(const GgufFile& model, const Tokenizer& tokenizer, const ChatTemplateFlags& flags,
                                   std::string* how);

}  // namespace pagoda::cli
