#include "api/chat_template.h"

#include <array>
#include <utility>

namespace pagoda {
namespace {

constexpr std::array<std::pair<ChatTemplateFamily, const char*>, 7> kNames = {{
    {ChatTemplateFamily::kChatml, "chatml"},
    {ChatTemplateFamily::kLlama2, "llama-2"},
    {ChatTemplateFamily::kLlama3, "llama-3"},
    {ChatTemplateFamily::kMistral, "mistral"},
    {ChatTemplateFamily::kGemma, "gemma"},
    {ChatTemplateFamily::kPhi3, "phi-3"},
    {ChatTemplateFamily::kZephyr, "zephyr"},
}};

bool contains(std::string_view text, std::string_view marker) { return text.find(marker) != std::string_view::npos; }

// Families that have no system turn fold the system text into the first user message.
std::vector<ChatMessage> fold_system_into_first_user(const std::vector<ChatMessage>& messages) {
  std::string system;
  std::vector<ChatMessage> out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n\n") + m.content;
      continue;
    }
    out.push_back(m);
  }
  if (!system.empty()) {
    for (ChatMessage& m : out)
      if (m.role == "user") {
        m.content = system + "\n\n" + m.content;
        return out;
      }
    out.insert(out.begin(), ChatMessage{"user", system});
  }
  return out;
}

std::string render_llama2_like(const std::vector<ChatMessage>& messages, bool llama2_system) {
  std::string out, system;
  bool first_user = true;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n\n") + m.content;
    } else if (m.role == "user") {
      if (!first_user) out += llama2_system ? "<s>" : "";
      out += "[INST] ";
      if (first_user && !system.empty())
        out += llama2_system ? "<<SYS>>\n" + system + "\n<</SYS>>\n\n" : system + "\n\n";
      out += m.content + " [/INST]";
      first_user = false;
    } else {  // assistant
      out += " " + m.content + (llama2_system ? " </s>" : "</s>");
    }
  }
  return out;
}

}  // namespace

const char* chat_template_name(ChatTemplateFamily family) {
  for (const auto& [f, name] : kNames)
    if (f == family) return name;
  return "chatml";
}

Result<ChatTemplateFamily> chat_template_from_name(std::string_view name) {
  for (const auto& [f, n] : kNames)
    if (name == n) return f;
  std::string known;
  for (const auto& [f, n] : kNames) known += std::string(known.empty() ? "" : ", ") + n;
  return make_error("unknown chat template '" + std::string(name) + "' (known: " + known + ")");
}

ChatTemplateFamily detect_chat_template(std::string_view t, bool* recognised) {
  *recognised = true;
  if (contains(t, "<|im_start|>")) return ChatTemplateFamily::kChatml;
  if (contains(t, "<|start_header_id|>")) return ChatTemplateFamily::kLlama3;
  if (contains(t, "<start_of_turn>")) return ChatTemplateFamily::kGemma;
  if (contains(t, "<|user|>") && contains(t, "<|end|>")) return ChatTemplateFamily::kPhi3;
  if (contains(t, "<|user|>")) return ChatTemplateFamily::kZephyr;
  if (contains(t, "[INST]") && contains(t, "<<SYS>>")) return ChatTemplateFamily::kLlama2;
  if (contains(t, "[INST]")) return ChatTemplateFamily::kMistral;
  *recognised = false;
  return ChatTemplateFamily::kChatml;
}

Result<std::string> render_chat(ChatTemplateFamily family, const std::vector<ChatMessage>& input) {
  if (input.empty()) return make_field_error("messages", "'messages' must hold at least one message");
  std::vector<ChatMessage> messages = input;
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string& role = messages[i].role;
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant")
      return make_field_error("messages", "messages[" + std::to_string(i) + "] has role '" + role +
                                              "'; supported roles are system, developer, user and assistant");
  }
  std::string out;
  switch (family) {
    case ChatTemplateFamily::kChatml:
      for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      return out + "<|im_start|>assistant\n";
    case ChatTemplateFamily::kLlama3:
      for (const ChatMessage& m : messages)
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatTemplateFamily::kLlama2:
      return render_llama2_like(messages, /*llama2_system=*/true);
    case ChatTemplateFamily::kMistral:
      return render_llama2_like(messages, /*llama2_system=*/false);
    case ChatTemplateFamily::kGemma:
      for (const ChatMessage& m : fold_system_into_first_user(messages))
        out += "<start_of_turn>" + std::string(m.role == "assistant" ? "model" : "user") + "\n" + m.content +
               "<end_of_turn>\n";
      return out + "<start_of_turn>model\n";
    case ChatTemplateFamily::kPhi3:
      for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      return out + "<|assistant|>\n";
    case ChatTemplateFamily::kZephyr:
      for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "</s>\n";
      return out + "<|assistant|>\n";
  }
  return out;
}

}  // namespace pagoda
