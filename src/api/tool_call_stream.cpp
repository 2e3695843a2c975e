#include "api/tool_call_stream.h"

#include <cctype>
#include <nlohmann/json.hpp>

namespace pagoda {
namespace {

constexpr size_t npos = std::string_view::npos;

bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_json_ws(std::string_view t, size_t i) {
  while (i < t.size() && is_json_ws(t[i])) ++i;
  return i;
}

// One past the JSON string starting at t[i] == '"'; npos when it does not end within t.
size_t string_end(std::string_view t, size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\') {
      ++i;
    } else if (t[i] == '"') {
      return i + 1;
    }
  }
  return npos;
}

// One past the JSON value starting at t[i] (not whitespace); npos when it does not end within t. Scalars end at
// the first delimiter, so a scalar at the very end of t is not known to be complete.
size_t value_end(std::string_view t, size_t i) {
  if (i >= t.size()) return npos;
  if (t[i] == '"') return string_end(t, i);
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (; i < t.size(); ++i) {
      const char c = t[i];
      if (c == '"') {
        i = string_end(t, i);
        if (i == npos) return npos;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return npos;
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_json_ws(t[i])) ++i;
  return i < t.size() ? i : npos;
}

// The call object starting at t[begin] == '{', as far as t goes.
ToolCallScan scan_object(std::string_view t, size_t begin) {
  ToolCallScan s;
  s.object_begin = begin;
  size_t i = begin + 1;
  for (;;) {
    i = skip_json_ws(t, i);
    if (i >= t.size()) return s;
    if (t[i] == '}') {
      s.object_end = i + 1;
      return s;
    }
    if (t[i] == ',') {
      ++i;
      continue;
    }
    if (t[i] != '"') return s;  // not JSON: the final parse decides
    const size_t key_end = string_end(t, i);
    if (key_end == npos) return s;
    const std::string_view key = t.substr(i + 1, key_end - i - 2);
    i = skip_json_ws(t, key_end);
    if (i >= t.size() || t[i] != ':') return s;
    i = skip_json_ws(t, i + 1);
    if (i >= t.size()) return s;
    const bool is_args = key == "arguments" || key == "parameters";
    if (is_args && s.args_begin == npos) {
      s.args_begin = i;
      s.args_object = t[i] == '{';
      s.name_first = s.has_name;
    }
    const size_t end = value_end(t, i);
    if (is_args && s.args_begin == i) s.args_end = end;
    if (end == npos) return s;
    if (key == "name" && t[i] == '"' && !s.has_name) {
      const auto name = nlohmann::json::parse(t.substr(i, end - i), nullptr, /*allow_exceptions=*/false);
      if (name.is_string()) {
        s.has_name = true;
        s.name = name.get<std::string>();
      }
    }
    i = end;
  }
}

// The call objects of a JSON list whose '[' is just before t[i]: objects separated by commas, as far as t goes.
void scan_object_list(std::string_view t, size_t i, std::vector<ToolCallScan>& out) {
  for (i = skip_json_ws(t, i); i < t.size() && t[i] == '{';) {
    out.push_back(scan_object(t, i));
    if (out.back().object_end == npos) return;
    i = skip_json_ws(t, out.back().object_end);
    if (i >= t.size() || t[i] != ',') return;
    i = skip_json_ws(t, i + 1);
  }
}

}  // namespace

std::vector<ToolCallScan> scan_tool_calls(ToolCallFormat format, std::string_view t) {
  std::vector<ToolCallScan> out;
  switch (format) {
    case ToolCallFormat::kHermes:
      for (size_t at = t.find(kHermesOpen); at != npos; at = t.find(kHermesOpen, at)) {
        const size_t i = skip_json_ws(t, at + kHermesOpen.size());
        if (i >= t.size()) break;
        if (t[i] != '{') {
          at = i;
          continue;
        }
        out.push_back(scan_object(t, i));
        if (out.back().object_end == npos) break;
        at = out.back().object_end;
      }
      break;
    case ToolCallFormat::kLlama3: {
      size_t i = skip_json_ws(t, 0);
      if (t.substr(i, kPythonTag.size()) == kPythonTag) i = skip_json_ws(t, i + kPythonTag.size());
      if (i < t.size() && t[i] == '{') out.push_back(scan_object(t, i));
      break;
    }
    case ToolCallFormat::kMistral: {
      const size_t at = t.find(kMistralMarker);
      if (at == npos) break;
      size_t i = skip_json_ws(t, at + kMistralMarker.size());
      if (i >= t.size() || t[i] != '[') break;
      scan_object_list(t, i + 1, out);
      break;
    }
    case ToolCallFormat::kLlama4: {
      // [<|python_start|> [text <|python_end|>]] call call ...
      size_t i = skip_json_ws(t, 0);
      if (t.substr(i, kPythonStart.size()) == kPythonStart) {
        i = skip_json_ws(t, i + kPythonStart.size());
        if (i < t.size() && t[i] != '{') {
          const size_t end = t.find(kPythonEnd, i);
          if (end == npos) break;
          i = skip_json_ws(t, end + kPythonEnd.size());
        }
      }
      while (i < t.size() && t[i] == '{') {
        out.push_back(scan_object(t, i));
        if (out.back().object_end == npos) break;
        i = skip_json_ws(t, out.back().object_end);
        if (t.substr(i, kPythonEnd.size()) == kPythonEnd) i = skip_json_ws(t, i + kPythonEnd.size());
      }
      break;
    }
    case ToolCallFormat::kQwen3Coder:
      break;  // XML: no JSON object to stream from; calls go out whole as their blocks close (ToolCallStream)
    case ToolCallFormat::kGeneric: {
      // {"tool_calls": [ call, ... ]}
      size_t i = skip_json_ws(t, 0);
      if (i >= t.size() || t[i] != '{') break;
      i = skip_json_ws(t, i + 1);
      static constexpr std::string_view kKey = "\"tool_calls\"";
      if (t.substr(i, kKey.size()) != kKey) break;
      i = skip_json_ws(t, i + kKey.size());
      if (i >= t.size() || t[i] != ':') break;
      i = skip_json_ws(t, i + 1);
      if (i >= t.size() || t[i] != '[') break;
      scan_object_list(t, i + 1, out);
      break;
    }
    case ToolCallFormat::kNone:
      break;
  }
  return out;
}

size_t unfinished_call_start(ToolCallFormat format, std::string_view text) {
  if (format == ToolCallFormat::kQwen3Coder) {
    const size_t open = text.rfind(kHermesOpen);
    if (open == npos) return npos;
    return text.find(kHermesClose, open) == npos ? open : npos;
  }
  const std::vector<ToolCallScan> calls = scan_tool_calls(format, text);
  if (calls.empty() || calls.back().object_end != npos) return npos;
  switch (format) {
    case ToolCallFormat::kHermes:
      return text.rfind(kHermesOpen, calls.back().object_begin);
    case ToolCallFormat::kMistral:
      return text.find(kMistralMarker);  // the calls are one list: all of it is unfinished
    case ToolCallFormat::kLlama3:
    case ToolCallFormat::kLlama4:
    case ToolCallFormat::kGeneric:
      return 0;
    case ToolCallFormat::kQwen3Coder:
    case ToolCallFormat::kNone:
      break;
  }
  return npos;
}

std::vector<ToolCallDelta> ToolCallStream::update(std::string_view text) {
  std::vector<ToolCallDelta> out;
  if (format_ == ToolCallFormat::kQwen3Coder) {
    // Each call whole, once its block has closed.
    const size_t last_close = text.rfind(kHermesClose);
    if (last_close == npos) return out;
    const ParsedReply done = parse_tool_calls(format_, text.substr(0, last_close + kHermesClose.size()), tools_);
    for (size_t k = sent_.size(); k < done.calls.size() && (parallel_ || k == 0); ++k) {
      out.push_back(ToolCallDelta{static_cast<int32_t>(k), true, done.calls[k].name, ""});
      out.push_back(ToolCallDelta{static_cast<int32_t>(k), false, "", done.calls[k].arguments});
      sent_.push_back(done.calls[k].arguments.size());
    }
    return out;
  }
  const std::vector<ToolCallScan> calls = scan_tool_calls(format_, text);
  for (size_t k = 0; k < calls.size() && (parallel_ || k == 0); ++k) {
    const ToolCallScan& c = calls[k];
    if (k == sent_.size()) {
      // A new call streams once its name is known and its arguments object has begun; calls stream in order.
      if (!(c.has_name && c.name_first && c.args_object)) break;
      sent_.push_back(0);
      out.push_back(ToolCallDelta{static_cast<int32_t>(k), true, c.name, ""});
    }
    const size_t end = c.args_end == npos ? text.size() : c.args_end;
    const size_t have = end - c.args_begin;
    if (have > sent_[k]) {
      out.push_back(ToolCallDelta{static_cast<int32_t>(k), false, "", std::string(text.substr(c.args_begin + sent_[k], have - sent_[k]))});
      sent_[k] = have;
    }
  }
  return out;
}

std::vector<ToolCallDelta> ToolCallStream::finish(std::string_view text, const ParsedReply& reply) {
  std::vector<ToolCallDelta> out = update(text);
  for (size_t k = sent_.size(); k < reply.calls.size(); ++k) {
    out.push_back(ToolCallDelta{static_cast<int32_t>(k), true, reply.calls[k].name, ""});
    out.push_back(ToolCallDelta{static_cast<int32_t>(k), false, "", reply.calls[k].arguments});
  }
  return out;
}

}  // namespace pagoda
