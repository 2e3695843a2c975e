#include "jinja/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/jinja_error.h"
#include "jinja/python_text.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

namespace {

// json.encoder's py_encode_basestring / py_encode_basestring_ascii.
void dump_string(std::string_view s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const char32_t c = py::next_code_point(s, i);
    char buf[16];
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {  // a surrogate pair
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                      static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      py::append_utf8(out, c);
    }
  }
  out += '"';
}

std::string float_text(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py::float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {}

  void dump(const Value& v, int level, std::string& out) {
    if (level > kMaxValueDepth) throw JinjaError("RecursionError", "maximum recursion depth exceeded in tojson");
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return;
      case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
      case Value::Kind::kFloat: out += float_text(v.as_float()); return;
      case Value::Kind::kString: dump_string(v.as_string(), o_.ensure_ascii, out); return;
      case Value::Kind::kList: {
        const auto& items = v.as_list().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out += o_.item_separator;
          newline(level + 1, out);
          dump(items[i], level + 1, out);
        }
        newline(level, out);
        out += ']';
        return;
      }
      case Value::Kind::kDict: {
        const Dict& d = v.as_dict();
        if (d.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [k, val] : d.entries()) entries.emplace_back(key_text(k), &val);
        if (o_.sort_keys)
          std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out += o_.item_separator;
          newline(level + 1, out);
          dump_string(entries[i].first, o_.ensure_ascii, out);
          out += o_.key_separator;
          dump(*entries[i].second, level + 1, out);
        }
        newline(level, out);
        out += '}';
        return;
      }
      default: throw_type_error("Object of type " + python_type_name(v) + " is not JSON serializable");
    }
  }

 private:
  void newline(int level, std::string& out) const {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  // Dict keys: json.dumps turns str, int, float, bool and None keys into strings and refuses others.
  static std::string key_text(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::kString: return k.as_string();
      case Value::Kind::kNone: return "null";
      case Value::Kind::kBool: return k.as_bool() ? "true" : "false";
      case Value::Kind::kInt: return std::to_string(k.as_int());
      case Value::Kind::kFloat: return float_text(k.as_float());
      default: throw_type_error("keys must be str, int, float, bool or None, not " + python_type_name(k));
    }
  }

  const JsonDumpOptions& o_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(v, 0, out);
  return out;
}

}  // namespace pagoda::jinja
