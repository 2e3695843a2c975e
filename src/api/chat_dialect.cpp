#include "api/chat_dialect.h"

#include "api/openai_response.h"

namespace pagoda {

std::string sse_event(const std::string& name, const nlohmann::json& data) {
  return "event: " + name + "\ndata: " + to_wire(data) + "\n\n";
}

std::string rename_in_message(std::string message, const std::string& from, const std::string& to) {
  if (from == to || from.empty()) return message;
  const std::string quoted = "'" + from + "'";
  for (size_t at = message.find(quoted); at != std::string::npos; at = message.find(quoted, at + to.size() + 2))
    message.replace(at, quoted.size(), "'" + to + "'");
  return message;
}

int64_t cached_tokens_of(const nlohmann::json& chat_response) {
  const auto usage = chat_response.find("usage");
  if (usage == chat_response.end() || !usage->is_object()) return -1;
  const auto details = usage->find("prompt_tokens_details");
  if (details == usage->end() || !details->is_object()) return -1;
  const auto cached = details->find("cached_tokens");
  return cached != details->end() && cached->is_number_integer() ? cached->get<int64_t>() : -1;
}

}  // namespace pagoda
