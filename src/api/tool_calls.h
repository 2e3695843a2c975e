// Tool calling: the request's tools and tool_choice, the format in which the chat template's model family writes
// tool calls, the grammar that forces a call (tool_choice "required" or a named function), and the parser that
// turns a reply into OpenAI's message.tool_calls.
//
// Formats (recognised in the chat template's source):
//   hermes   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, one block per call
//            (Qwen2.5, Qwen3, QwQ, Hermes 2/3 tool-use templates)
//   llama-3  {"name": "f", "parameters": {...}} as the whole reply, optionally after <|python_tag|>
//            (Llama 3.1 / 3.2 / 3.3 templates; one call per reply)
//   mistral  [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...] (Mistral v0.3, Nemo, Mixtral tool templates)
//   llama-4  {"name": "f", "parameters": {...}} objects, one after another, optionally after <|python_start|> (and a
//            text up to <|python_end|>), as Llama 4's template writes an assistant's calls
//   qwen3-coder  <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n...</function>\n</tool_call>: XML,
//            one block per call; a value is raw text for a string parameter, JSON otherwise (Qwen3-Coder)
//   generic  {"tool_calls": [{"name": "f", "arguments": {...}}, ...]} or {"response": "text"} as the whole reply: for
//            every template that shows none of the formats above (api/generic_tool_format.h); the tools and the
//            reply's schema go into the system turn and a grammar holds the reply to that schema
// Markers are matched as text: where a vocabulary has them as control tokens (Mistral's [TOOL_CALLS]), a forced
// call spells them out in ordinary tokens.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pagoda {

enum class ToolCallFormat { kNone, kHermes, kLlama3, kMistral, kGeneric, kLlama4, kQwen3Coder };

// The formats' markers, matched as text.
inline constexpr std::string_view kHermesOpen = "<tool_call>";
inline constexpr std::string_view kHermesClose = "</tool_call>";
inline constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
inline constexpr std::string_view kPythonTag = "<|python_tag|>";
inline constexpr std::string_view kPythonStart = "<|python_start|>";
inline constexpr std::string_view kPythonEnd = "<|python_end|>";
inline constexpr std::string_view kXmlFunctionOpen = "<function=";
inline constexpr std::string_view kXmlFunctionClose = "</function>";
inline constexpr std::string_view kXmlParameterOpen = "<parameter=";
inline constexpr std::string_view kXmlParameterClose = "</parameter>";

const char* tool_call_format_name(ToolCallFormat f);
// The format a chat template's model writes calls in; kNone when the template shows none pagoda knows.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

struct ToolSpec {
  std::string name;
  std::string description;            // "" when the tool has none
  nlohmann::ordered_json parameters;  // a JSON Schema (an empty object schema when the tool has none)
};

struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kNamed };
  Kind kind = Kind::kAuto;
  std::string name;  // kNamed
};

// OpenAI's tools: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}].
// Errors (param "tools") name the entry and the problem.
Result<std::vector<ToolSpec>> read_tools(const nlohmann::ordered_json& tools);
// "none", "auto", "required" or {"type": "function", "function": {"name"}} naming one of `tools`.
Result<ToolChoice> read_tool_choice(const nlohmann::ordered_json& choice, const std::vector<ToolSpec>& tools);

// GBNF forcing the format's call(s): one call, or one or more when `parallel`; each call's arguments valid for its
// tool's parameters; kNamed allows that tool only. kGeneric with kAuto: the calls or a {"response": "..."} message.
// Errors: a parameters schema pagoda cannot compile.
Result<std::string> tool_call_gbnf(ToolCallFormat format, const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                   bool parallel);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};
struct ParsedReply {
  std::string content;  // the text outside the calls
  std::vector<ParsedToolCall> calls;
};
// A call object {"name": "...", "arguments"|"parameters": {...} or a JSON string}: its name and arguments, or
// nullopt.
std::optional<ParsedToolCall> tool_call_from_json(const nlohmann::ordered_json& j);
// A finished reply: its tool calls (well-formed ones only; a malformed block stays in the content) and the rest.
// tools: the request's tools, which qwen3-coder's XML values are typed by (nullptr: a value that parses as JSON
// is JSON).
ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view text, const std::vector<ToolSpec>* tools = nullptr);

// Streaming: how many leading bytes of `text` (the reply so far) are surely content, not part of a tool call that
// may be forming. `decided` remembers, for llama-3, that the reply did not start as a call.
size_t releasable_content(ToolCallFormat format, std::string_view text, bool* decided);

// The id of call `index` of a response: "call_" and 24 hex digits for most formats; Mistral's templates require
// 9 alphanumerics.
std::string tool_call_id(ToolCallFormat format, std::string_view response_id, int32_t choice, int32_t index);

}  // namespace pagoda
