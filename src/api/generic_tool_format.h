// The generic tool-call format: tools for a chat template that shows no tool-call format of its own (SmolLM2's
// ChatML, the built-in families, most fine-tunes), in the spirit of llama-server's generic format.
//
//  - The tools and the reply's JSON Schema go into the system turn (generic_tool_instructions: the exact text is
//    in docs/server.md); the template itself is not given `tools`.
//  - The reply is one JSON object, held to that schema by a grammar (tool_call_gbnf with ToolCallFormat::kGeneric):
//      {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}   calls (one when parallel_tool_calls is false)
//      {"response": "text"}                                       a message (tool_choice "auto" only)
//    and is read back into message.tool_calls or message.content.
//  - History round-trips through any template (generic_tool_messages): an assistant turn with tool_calls becomes
//    the reply the model would have written; a tool result becomes a user turn {"tool_response": {...}} (merged
//    with neighbouring user turns, so templates that require alternating roles accept it).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_calls.h"

namespace pagoda {

// The JSON Schema of a reply: the calls (each tool's name and parameters), or with kAuto also a message.
nlohmann::ordered_json generic_reply_schema(const std::vector<ToolSpec>& tools, const ToolChoice& choice, bool parallel);

// The text added to the system turn: the tools, the reply schema and one line on how to use them; with kNone the
// tools and a line saying not to call one (as native templates still show the tools with tool_choice "none").
std::string generic_tool_instructions(const std::vector<ToolSpec>& tools, const ToolChoice& choice, bool parallel);

// The conversation for a template without a tool-call format (messages as adapt_openai_messages leaves them):
// assistant tool_calls and tool results rewritten as text, every message reduced to role and content.
// `instructions` (may be empty) go into the system turn: appended to a leading system message or a new one when
// `system_turn`, else at the start of the first user message (for templates that refuse a system role).
// `wrap_replies`: earlier assistant texts become {"response": "..."}, the form the model is asked to answer in.
nlohmann::ordered_json generic_tool_messages(const nlohmann::ordered_json& messages, const std::string& instructions,
                                             bool system_turn, bool wrap_replies);

// Whether a conversation holds what only a tool-call format can render: tool_calls or a "tool" message.
bool has_tool_history(const nlohmann::ordered_json& messages);

// A finished (or cut-off) generic reply: its calls, or its message as content; text that is neither is content.
ParsedReply parse_generic_reply(std::string_view text);

// Streaming: the message of a reply that began as {"response": "...", decoded as far as it goes (an escape cut
// in half waits for its end); "" for a reply that is not a message.
std::string generic_response_text(std::string_view text);

}  // namespace pagoda
