#include "localai/chat_deltas.h"

#include <string>

namespace pagoda::localai {

std::vector<backend::ChatDelta> chat_deltas_of(const nlohmann::json& chunk) {
  std::vector<backend::ChatDelta> out;
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) return out;
  const auto found = (*choices)[0].find("delta");
  if (found == (*choices)[0].end() || !found->is_object()) return out;
  const nlohmann::json& delta = *found;
  backend::ChatDelta d;
  if (delta.contains("content") && delta["content"].is_string()) d.set_content(delta["content"].get<std::string>());
  if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
    for (const nlohmann::json& call : delta["tool_calls"]) {
      if (!call.is_object()) continue;
      backend::ToolCallDelta* t = d.add_tool_calls();
      auto text = [](const nlohmann::json& object, const char* key) {
        const auto v = object.find(key);
        return v != object.end() && v->is_string() ? v->get<std::string>() : std::string();
      };
      if (const auto index = call.find("index"); index != call.end() && index->is_number_integer())
        t->set_index(index->get<int32_t>());
      t->set_id(text(call, "id"));
      if (const auto fn = call.find("function"); fn != call.end() && fn->is_object()) {
        t->set_name(text(*fn, "name"));
        t->set_arguments(text(*fn, "arguments"));
      }
    }
  }
  if (!d.content().empty() || d.tool_calls_size() > 0) out.push_back(std::move(d));
  return out;
}

}  // namespace pagoda::localai
