// ToolCallStream: a chat reply's tool calls as they form, for streaming: each call's header (index, id, name) as
// soon as its name is known, then its arguments fragment by fragment as tokens arrive, the way OpenAI streams
// delta.tool_calls.
//
// The reply's text from the format's marker on is re-scanned at every update (replies are short). A call streams
// when its object names the function before its arguments ({"name": "f", "arguments": {...}}: the order every
// supported template shows and every forced call is generated in) and its arguments are a JSON object; the
// fragments are the model's own text of that object, so their concatenation is the arguments as written, valid
// JSON once the object closes. Qwen3-Coder's XML calls go out whole (header and arguments) as each block closes. A
// call of another shape (arguments first, arguments as a JSON string) is sent
// whole when the reply ends, as the final parse (parse_tool_calls) reads it. A call that began streaming stays a
// call: if the model then breaks its JSON, the client has its fragments (as with a reply cut off by max_tokens,
// where finish_reason says "length").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_calls.h"

namespace pagoda {

struct ToolCallDelta {
  int32_t index = 0;
  bool header = false;    // the call's first delta: carries its id, type and name
  std::string name;       // header only
  std::string arguments;  // this delta's fragment of the arguments text ("" in a bare header)
};

// Where one call object lies in the reply text (offsets into the scanned text; npos where not reached yet).
struct ToolCallScan {
  size_t object_begin = std::string_view::npos;
  size_t object_end = std::string_view::npos;  // one past the closing brace
  bool has_name = false;
  std::string name;
  bool name_first = false;                      // the name was complete before the arguments began
  bool args_object = false;                     // the arguments value starts with '{'
  size_t args_begin = std::string_view::npos;  // the arguments value's first byte
  size_t args_end = std::string_view::npos;    // one past its closing brace
};
// The call objects of `text` (the reply from its format's marker on) as far as they go.
std::vector<ToolCallScan> scan_tool_calls(ToolCallFormat format, std::string_view text);
// Where the block of a call object that never closes begins (its marker; for llama-3 the reply's start); npos
// when every call object in `text` is closed. A reply cut off by max_tokens in the middle of a call has one.
size_t unfinished_call_start(ToolCallFormat format, std::string_view text);

class ToolCallStream {
 public:
  // tools: the request's tools (qwen3-coder's values are typed by them); nullptr: none known.
  ToolCallStream(ToolCallFormat format, bool parallel, const std::vector<ToolSpec>* tools = nullptr)
      : format_(format), parallel_(parallel), tools_(tools) {}

  // The deltas the reply's text so far adds (`text` only grows between calls).
  std::vector<ToolCallDelta> update(std::string_view text);
  // At the end of the reply: the rest of the streamed calls' arguments, then every call of `reply` (the final
  // parse) beyond those streamed, whole.
  std::vector<ToolCallDelta> finish(std::string_view text, const ParsedReply& reply);
  // Calls whose header was sent.
  size_t calls_started() const { return sent_.size(); }

 private:
  ToolCallFormat format_;
  bool parallel_;
  const std::vector<ToolSpec>* tools_;
  std::vector<size_t> sent_;  // per streamed call: bytes of its arguments sent
};

}  // namespace pagoda
