// Python's json.dumps, which transformers installs as the tojson filter (replacing jinja2's own, which sorts keys
// and escapes HTML characters). The layout matters byte for byte: tool schemas reach the prompt through it.
#pragma once

#include <optional>
#include <string>

#include "jinja/value.h"

namespace pagoda::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;           // transformers' default: non-ASCII text is written as is
  std::optional<std::string> indent;   // nullopt: one line; else a newline and this much indent per level
  std::string item_separator = ", ";   // json.dumps' defaults; "," when indent is given and separators is not
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Throws JinjaError("TypeError") for values JSON cannot hold (Undefined, macros, namespaces, ...), as json.dumps
// does.
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace pagoda::jinja
