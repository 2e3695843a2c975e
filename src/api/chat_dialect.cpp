#include "api/chat_dialect.h"

#include "api/openai_response.h"

namespace pagoda {

std::string sse_event(const std::string& name, const nlohmann::json& data) {
  return "event: " + name + "\ndata: " + to_wire(data) + "\n\n";
}

}  // namespace pagoda
