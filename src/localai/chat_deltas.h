// Reply.chat_deltas (LocalAI's pre-parsed content and tool calls) from one OpenAI chat chunk as the server's
// ResponseBuilder streams it for a request with tools (api/openai_response.h): delta.content -> ChatDelta.content,
// delta.tool_calls[i] -> ToolCallDelta{index, id, name, arguments}. LocalAI prefers these deltas to parsing
// Reply.message itself, so a reply's tool calls reach it in the template's own format, parsed once, by pagoda.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "backend.pb.h"

namespace pagoda::localai {

// The deltas of `chunk`'s first choice; none when it carries neither content nor tool calls.
std::vector<backend::ChatDelta> chat_deltas_of(const nlohmann::json& chunk);

}  // namespace pagoda::localai
