// ChatPrompt: turns a conversation (OpenAI-style messages, optional tools) into the model's prompt text.
//
// Two kinds:
//  - a Jinja chat template (the model's GGUF `tokenizer.chat_template`, or --chat-template-file), rendered by
//    src/jinja the way transformers' apply_chat_template renders it. Its variables: messages, tools (None when
//    absent), documents (None), add_generation_prompt, bos_token and eos_token (the vocabulary's texts for them),
//    then the server's --chat-template-kwargs, then the request's chat_template_kwargs (later ones win);
//  - one of the seven built-in families of api/chat_template.h (--chat-template NAME), hand-written renderers for
//    models that ship no template. They take role/content messages only: no tools, no tool calls.
//
// Messages reach a Jinja template as they were given (what `pagoda template` and POST /apply-template show, byte
// for byte what jinja2 renders). The chat endpoint first adapts OpenAI's wire format the way vLLM and llama.cpp do:
// a tool call's `arguments` JSON string becomes the object templates expect; a missing or null content becomes ""
// (with null, most real templates fail: 45 of the 60 in ../shared/templates, against 14 with ""); a list of text
// parts becomes one string (the parts concatenated, as the built-in families do) unless the template reads parts
// itself (its source names a part's 'text').
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/chat_template.h"
#include "api/tool_calls.h"
#include "jinja/template.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda {

struct ChatInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // a list of objects with a string 'role'
  nlohmann::ordered_json tools;                                       // null or a list
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // the request's chat_template_kwargs
};

class ChatPrompt {
 public:
  static ChatPrompt builtin(ChatTemplateFamily family);
  // source: the template text; origin: where it came from, for describe() ("the model's tokenizer.chat_template").
  // Errors: the template does not compile (jinja2's TemplateSyntaxError message, with its line).
  static Result<ChatPrompt> jinja(std::string_view source, std::string bos_token, std::string eos_token,
                                  std::string origin);

  bool is_jinja() const { return jinja_ != nullptr; }
  // How the template's model family writes tool calls (kNone for built-in families and templates without tools).
  ToolCallFormat tool_format() const { return tool_format_; }
  // "jinja (ORIGIN)" or "built-in chatml".
  std::string describe() const;
  // The server's --chat-template-kwargs: an object whose entries every rendering gets (a request's own
  // chat_template_kwargs override them key by key). Errors: not an object, or a reserved name.
  Status set_default_kwargs(const nlohmann::ordered_json& kwargs);
  // Where strftime_now's clock comes from (tests freeze it); default: the real local time.
  void set_render_options(jinja::RenderOptions options) { options_ = std::move(options); }

  // The prompt text. Errors (Error::param "messages", or "chat_template_kwargs"): a message that is not an object
  // with a string role, a template that raises (its own message, e.g. "Conversation roles must alternate
  // user/assistant/user/assistant/..."), tools or tool calls given to a built-in family.
  Result<std::string> render(const ChatInput& input) const;

  // OpenAI's wire format adapted for this template (see the file comment); the chat endpoint's messages.
  nlohmann::ordered_json adapt_openai_messages(const nlohmann::ordered_json& messages) const;

 private:
  ChatTemplateFamily family_ = ChatTemplateFamily::kChatml;
  std::shared_ptr<const jinja::Template> jinja_;
  std::string bos_token_, eos_token_, origin_;
  bool reads_content_parts_ = false;
  ToolCallFormat tool_format_ = ToolCallFormat::kNone;  // the template looks at {"type": "text", "text": ...} parts itself
  nlohmann::ordered_json default_kwargs_ = nlohmann::ordered_json::object();
  jinja::RenderOptions options_;
};

// Checks chat_template_kwargs (a request's or the server's): an object, without the names the renderer sets itself
// (messages, tools, add_generation_prompt).
Status check_chat_template_kwargs(const nlohmann::ordered_json& kwargs, const char* param);

// The prompt tokens of a rendered conversation: special tokens parsed, BOS added as the vocabulary says, but never
// twice: a template that writes bos_token itself (Llama 3, Mistral, ...) gets it removed from the text first, as
// llama.cpp's server does.
std::vector<TokenId> tokenize_chat_prompt(std::string_view text, const Tokenizer& tokenizer);

// The vocabulary's BOS / EOS texts for a template's bos_token / eos_token ("" when the model has none).
std::string bos_token_text(const Tokenizer& tokenizer);
std::string eos_token_text(const Tokenizer& tokenizer);

}  // namespace pagoda
