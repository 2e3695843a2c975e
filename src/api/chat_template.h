// Chat prompts: renders a list of messages into the prompt text of a well-known chat template family.
// pagoda does not run Jinja: a model's `tokenizer.chat_template` is recognised by its marker tokens and rendered
// by the hand-written equivalent of its family. Families and their shape (BOS is the tokenizer's business):
//   chatml   <|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n
//   llama-2  [INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST] ASSISTANT </s><s>[INST] USER [/INST]
//   llama-3  <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> ... <|start_header_id|>assistant...
//   mistral  [INST] SYSTEM\n\nUSER [/INST] ASSISTANT</s>[INST] USER [/INST]
//   gemma    <start_of_turn>user\nCONTENT<end_of_turn>\n ... <start_of_turn>model\n   (system joins first user)
//   phi-3    <|system|>\nCONTENT<|end|>\n<|user|>\nCONTENT<|end|>\n<|assistant|>\n
//   zephyr   <|system|>\nCONTENT</s>\n<|user|>\nCONTENT</s>\n<|assistant|>\n
// A model without a template (or with one no family matches) gets chatml, as llama.cpp's server does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pagoda {

enum class ChatTemplateFamily { kChatml, kLlama2, kLlama3, kMistral, kGemma, kPhi3, kZephyr };

struct ChatMessage {
  std::string role;  // system, user or assistant ("developer" is read as system)
  std::string content;
};

const char* chat_template_name(ChatTemplateFamily family);
Result<ChatTemplateFamily> chat_template_from_name(std::string_view name);
// The family whose markers the template text holds; nullopt-like false in *recognised when none does (chatml).
ChatTemplateFamily detect_chat_template(std::string_view template_text, bool* recognised);

// The prompt text for `messages`, ending with the assistant's turn opened (add_generation_prompt). Errors name the
// message: an unknown role, an empty conversation.
Result<std::string> render_chat(ChatTemplateFamily family, const std::vector<ChatMessage>& messages);

}  // namespace pagoda
