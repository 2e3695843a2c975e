#include "api/chat_prompt.h"

#include <array>

#include "api/request_json.h"

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::array<std::string_view, 3> kReservedKwargs = {"messages", "tools", "add_generation_prompt"};

// The built-in families take role/content messages: content a string, null, or text parts (concatenated).
Result<std::vector<ChatMessage>> plain_messages(const ojson& messages) {
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ojson& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    for (const auto& [key, value] : m.items())
      if (key != "role" && key != "content" && !value.is_null())
        return make_field_error("messages", "'" + where + "." + key + "' needs the model's Jinja chat template (" +
                                                "the built-in families take only 'role' and 'content')");
    ChatMessage msg{m["role"].get<std::string>(), {}};
    if (field_set(m, "content")) {
      const ojson& c = m["content"];
      if (c.is_string()) {
        msg.content = c.get<std::string>();
      } else if (c.is_array()) {
        for (const ojson& part : c) {
          if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
              !part["text"].is_string())
            return make_field_error("messages", "'" + where + ".content' may only hold {\"type\": \"text\", " +
                                                    "\"text\": ...} parts");
          msg.content += part["text"].get<std::string>();
        }
      } else {
        return make_field_error("messages", "'" + where + ".content' must be a string or a list of parts");
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

Status check_messages(const ojson& messages) {
  if (!messages.is_array()) return make_field_error("messages", "'messages' must be a list of messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ojson& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return make_field_error("messages", "messages[" + std::to_string(i) + "] must be an object with a string 'role'");
  }
  return Status::success();
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return !prefix.empty() && s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Status check_chat_template_kwargs(const ojson& kwargs, const char* param) {
  if (!kwargs.is_object()) return make_field_error(param, std::string("'") + param + "' must be an object");
  for (const auto& [key, value] : kwargs.items())
    for (std::string_view reserved : kReservedKwargs)
      if (key == reserved)
        return make_field_error(param, std::string("'") + param + "' may not set '" + key +
                                           "': the request itself gives it");
  return Status::success();
}

ChatPrompt ChatPrompt::builtin(ChatTemplateFamily family) {
  ChatPrompt p;
  p.family_ = family;
  return p;
}

Result<ChatPrompt> ChatPrompt::jinja(std::string_view source, std::string bos_token, std::string eos_token,
                                     std::string origin) {
  auto t = jinja::parse_template(source);
  if (!t.ok()) return make_error(origin + " does not compile: " + t.error().message);
  ChatPrompt p;
  p.jinja_ = std::make_shared<const jinja::Template>(std::move(*t));
  p.bos_token_ = std::move(bos_token);
  p.eos_token_ = std::move(eos_token);
  p.origin_ = std::move(origin);
  // Templates that render content parts themselves look up a part's text: item['text'] / item.text / 'text'.
  p.tool_format_ = detect_tool_call_format(source);
  p.reads_content_parts_ = source.find("['text']") != std::string_view::npos ||
                           source.find("[\"text\"]") != std::string_view::npos ||
                           source.find(".text") != std::string_view::npos ||
                           source.find("== 'text'") != std::string_view::npos ||
                           source.find("== \"text\"") != std::string_view::npos;
  return p;
}

std::string ChatPrompt::describe() const {
  return is_jinja() ? "jinja (" + origin_ + ")" : std::string("built-in ") + chat_template_name(family_);
}

Status ChatPrompt::set_default_kwargs(const ojson& kwargs) {
  PAGODA_RETURN_IF_ERROR(check_chat_template_kwargs(kwargs, "--chat-template-kwargs"));
  default_kwargs_ = kwargs;
  return Status::success();
}

ojson ChatPrompt::adapt_openai_messages(const ojson& messages) const {
  if (!is_jinja() || !messages.is_array()) return messages;
  ojson out = messages;
  for (ojson& m : out) {
    if (!m.is_object()) continue;
    if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (ojson& call : m["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
        ojson& fn = call["function"];
        if (!fn.contains("arguments") || !fn["arguments"].is_string()) continue;
        ojson parsed = ojson::parse(fn["arguments"].get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_object()) fn["arguments"] = std::move(parsed);
      }
    }
    if (!field_set(m, "content")) m["content"] = "";
    if (!reads_content_parts_ && m["content"].is_array()) {
      std::string text;
      bool all_text = true;
      for (const ojson& part : m["content"]) {
        if (part.is_object() && part.contains("type") && part["type"] == "text" && part.contains("text") &&
            part["text"].is_string()) {
          text += part["text"].get<std::string>();
        } else {
          all_text = false;
        }
      }
      if (all_text) m["content"] = text;
    }
  }
  return out;
}

Result<std::string> ChatPrompt::render(const ChatInput& input) const {
  PAGODA_RETURN_IF_ERROR(check_messages(input.messages));
  if (!input.tools.is_null() && !input.tools.is_array()) return make_field_error("tools", "'tools' must be a list");
  PAGODA_RETURN_IF_ERROR(check_chat_template_kwargs(input.kwargs, "chat_template_kwargs"));
  if (!is_jinja()) {
    if (!input.tools.is_null())
      return make_field_error("tools", std::string("tools need the model's Jinja chat template; the built-in '") +
                                           chat_template_name(family_) + "' family has none");
    if (!input.add_generation_prompt)
      return make_error(std::string("the built-in '") + chat_template_name(family_) +
                        "' family always opens the assistant's turn (no add_generation_prompt: false)");
    auto messages = plain_messages(input.messages);
    if (!messages.ok()) return messages.error();
    return render_chat(family_, *messages);
  }
  ojson vars = ojson::object();
  vars["messages"] = input.messages;
  vars["tools"] = input.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = input.add_generation_prompt;
  vars["bos_token"] = bos_token_;
  vars["eos_token"] = eos_token_;
  for (const auto& [k, v] : default_kwargs_.items()) vars[k] = v;
  for (const auto& [k, v] : input.kwargs.items()) vars[k] = v;
  auto context = jinja::Value::from_json(vars);
  if (!context.ok()) return make_field_error("messages", "the conversation cannot be rendered: " + context.error().message);
  auto text = jinja_->render(*context, options_);
  if (!text.ok()) {
    // raise_exception's text is the template's own message; other errors are jinja2's, named by type.
    const std::string& code = text.error().code;
    return make_field_error("messages", code == "TemplateError"
                                            ? "the chat template refused the conversation: " + text.error().message
                                            : "the chat template failed (" + code + "): " + text.error().message);
  }
  return std::move(*text);
}

std::vector<TokenId> tokenize_chat_prompt(std::string_view text, const Tokenizer& tokenizer) {
  if (tokenizer.add_bos() && tokenizer.bos()) {
    const std::string& bos = tokenizer.token_text(*tokenizer.bos());
    if (starts_with(text, bos)) text.remove_prefix(bos.size());
  }
  return tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/true);
}

std::string bos_token_text(const Tokenizer& tokenizer) {
  return tokenizer.bos() ? tokenizer.token_text(*tokenizer.bos()) : std::string();
}

std::string eos_token_text(const Tokenizer& tokenizer) {
  return tokenizer.eos() ? tokenizer.token_text(*tokenizer.eos()) : std::string();
}

}  // namespace pagoda
