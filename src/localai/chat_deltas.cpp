#include "localai/chat_deltas.h"

#include <string>

namespace pagoda::localai {

std::vector<backend::ChatDelta> chat_deltas_of(const nlohmann::json& chunk) {
  std::vector<backend::ChatDelta> out;
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return out;
  const nlohmann::json& delta = (*choices)[0].value("delta", nlohmann::json::object());
  backend::ChatDelta d;
  if (delta.contains("content") && delta["content"].is_string()) d.set_content(delta["content"].get<std::string>());
  if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
    for (const nlohmann::json& call : delta["tool_calls"]) {
      backend::ToolCallDelta* t = d.add_tool_calls();
      t->set_index(call.value("index", 0));
      t->set_id(call.value("id", std::string()));
      const nlohmann::json& fn = call.value("function", nlohmann::json::object());
      t->set_name(fn.value("name", std::string()));
      t->set_arguments(fn.value("arguments", std::string()));
    }
  }
  if (!d.content().empty() || d.tool_calls_size() > 0) out.push_back(std::move(d));
  return out;
}

}  // namespace pagoda::localai
