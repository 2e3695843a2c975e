// Python methods of str, dict and list that templates call (message.content.strip(), tool.get("x"),
// "a,b".split(","), ...). The mutating ones are refused the way jinja2's ImmutableSandboxedEnvironment refuses
// them: the attribute is an Undefined whose use raises SecurityError.
#include <algorithm>
#include <iterator>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/python_text.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

namespace {

constexpr std::string_view kStrMethods[] = {
    "capitalize", "casefold",  "center",     "count",   "endswith",     "expandtabs", "find",    "format",
    "index",      "isalnum",   "isalpha",    "isascii", "isdecimal",    "isdigit",    "islower", "isnumeric",
    "isspace",    "istitle",   "isupper",    "join",    "ljust",        "lower",      "lstrip",  "partition",
    "removeprefix", "removesuffix", "replace", "rfind", "rindex",      "rjust",      "rpartition", "rsplit",
    "rstrip",     "split",     "splitlines", "startswith", "strip",     "swapcase",   "title",   "upper",
    "zfill",      "encode",    "isidentifier"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values", "copy"};
constexpr std::string_view kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update",
                                                           "fromkeys"};
constexpr std::string_view kListMethods[] = {"count", "index", "copy"};
constexpr std::string_view kListMutators[] = {"append", "clear", "pop",    "reverse",
                                                           "insert", "sort",  "extend", "remove"};

template <size_t N>
bool one_of(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

Value bound(const Value& self, std::string_view name) {
  return Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(self, std::string(name))));
}

Value unsafe(const Value& self, std::string_view name) {
  return Value::forbidden("access to attribute '" + std::string(name) + "' of '" + python_type_name(self) +
                          "' object is unsafe.");
}

const std::string& str_arg(const Value& v, const char* what) {
  if (!v.is_string()) throw_type_error(std::string(what) + " must be str, not " + python_type_name(v));
  return v.as_string();
}

std::optional<std::string> chars_arg(const ArgBinder& b, size_t i) {
  if (!b.has(i) || b.get(i).is_none()) return std::nullopt;
  return str_arg(b.get(i), "strip arg");
}

int64_t method_int_arg(const Value& v) {
  const auto i = as_integer(v);
  if (!i) throw_type_error("'" + python_type_name(v) + "' object cannot be interpreted as an integer");
  return *i;
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.emplace_back(std::move(p));
  return Value::list(std::move(items));
}

// startswith / endswith: a str or a tuple of str, optional start/end (code point positions).
bool starts_or_ends(const std::string& s, const ArgBinder& b, bool ends) {
  std::string text = s;
  if (b.has(1) || b.has(2)) {
    const Value start = b.get_or(1, Value::none());
    const Value stop = b.get_or(2, Value::none());
    text = get_slice(Value(s), start, stop, Value::none()).as_string();
  }
  auto test = [&](const Value& p) {
    const std::string& prefix = str_arg(p, ends ? "endswith first arg" : "startswith first arg");
    if (prefix.size() > text.size()) return false;
    return ends ? text.compare(text.size() - prefix.size(), prefix.size(), prefix) == 0
                : text.compare(0, prefix.size(), prefix) == 0;
  };
  const Value& arg = b.required(0);
  if (arg.is_list() && arg.as_list().is_tuple) {
    for (const Value& p : arg.as_list().items)
      if (test(p)) return true;
    return false;
  }
  return test(arg);
}

// str.format with the sandbox's rules: positional ({}, {0}) and keyword ({name}) fields, attribute and index
// lookups ({0.name}, {0[1]}), !s / !r conversions; format specs are not supported.
std::string str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw_value_error("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) throw_value_error("expected '}' before end of string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 0;
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) throw_value_error("expected ':' after conversion specifier");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) throw_value_error("format specifications are not supported");
    size_t name_end = 0;
    while (name_end < field.size() && field[name_end] != '.' && field[name_end] != '[') ++name_end;
    const std::string name = field.substr(0, name_end);
    Value v;
    if (name.empty() || std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      const size_t index = name.empty() ? auto_index++ : std::stoul(name);
      if (index >= args.positional.size()) throw JinjaError("IndexError", "Replacement index out of range");
      v = args.positional[index];
    } else {
      const auto it = std::find_if(args.keyword.begin(), args.keyword.end(), [&](const auto& kv) { return kv.first == name; });
      if (it == args.keyword.end()) throw JinjaError("KeyError", "'" + name + "'");
      v = it->second;
    }
    for (size_t p = name_end; p < field.size();) {
      if (field[p] == '.') {
        size_t e = p + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
        v = get_attribute(v, field.substr(p + 1, e - p - 1));
        p = e;
      } else {
        const size_t e = field.find(']', p);
        if (e == std::string::npos) throw_value_error("Missing ']' in format string");
        const std::string key = field.substr(p + 1, e - p - 1);
        const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        v = get_item(v, numeric ? Value(static_cast<int64_t>(std::stoll(key))) : Value(key));
        p = e + 1;
      }
    }
    out += conversion == 'r' ? repr(v) : to_str(v);
  }
  return out;
}

Value call_str_method(Renderer& r, const std::string& s, std::string_view name, CallArgs& args) {
  const std::string fn = "str." + std::string(name);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder b(fn, args, {"chars"});
    return Value(py::strip(s, chars_arg(b, 0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder b(fn, args, {"sep", "maxsplit"});
    std::optional<std::string> sep;
    if (b.has(0) && !b.get(0).is_none()) sep = str_arg(b.get(0), "sep");
    if (sep && sep->empty()) throw_value_error("empty separator");
    const int64_t maxsplit = b.has(1) ? method_int_arg(b.get(1)) : -1;
    return string_list(name == "split" ? py::split(s, sep, maxsplit) : py::rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    ArgBinder b(fn, args, {"keepends"});
    if (b.has(0) && truthy(b.get(0))) throw_value_error("splitlines(keepends=True) is not supported");
    return string_list(py::splitlines(s));
  }
  if (name == "startswith" || name == "endswith") {
    ArgBinder b(fn, args, {"prefix", "start", "end"});
    return Value(starts_or_ends(s, b, name == "endswith"));
  }
  if (name == "replace") {
    ArgBinder b(fn, args, {"old", "new", "count"});
    const int64_t count = b.has(2) ? method_int_arg(b.get(2)) : -1;
    return Value(py::replace(s, str_arg(b.required(0), "replace() argument 1"),
                             str_arg(b.required(1), "replace() argument 2"), count));
  }
  if (name == "upper") return Value(py::upper(s));
  if (name == "lower" || name == "casefold") return Value(py::lower(s));
  if (name == "title") return Value(py::title(s));
  if (name == "capitalize") return Value(py::capitalize(s));
  if (name == "swapcase") return Value(py::swapcase(s));
  if (name == "find" || name == "index" || name == "rfind" || name == "rindex" || name == "count") {
    ArgBinder b(fn, args, {"sub", "start", "end"});
    const std::string& sub = str_arg(b.required(0), "must be str");
    const Value start = b.get_or(1, Value::none());
    const Value stop = b.get_or(2, Value::none());
    const std::string text = (b.has(1) || b.has(2)) ? get_slice(Value(s), start, stop, Value::none()).as_string() : s;
    int64_t offset = 0;
    if (b.has(1) && !start.is_none()) {
      const int64_t len = static_cast<int64_t>(py::length(s));
      offset = method_int_arg(start);
      if (offset < 0) offset = std::max<int64_t>(0, offset + len);
      offset = std::min(offset, len);
    }
    if (name == "count") return Value(py::count(text, sub));
    int64_t at = -1;
    if (name == "find" || name == "index") {
      at = py::find(text, sub);
    } else {
      const size_t hit = text.rfind(sub);
      if (hit != std::string::npos) at = static_cast<int64_t>(py::length(std::string_view(text).substr(0, hit)));
    }
    if (at < 0) {
      if (name == "index" || name == "rindex") throw_value_error("substring not found");
      return Value(int64_t{-1});
    }
    return Value(at + offset);
  }
  if (name == "join") {
    ArgBinder b(fn, args, {"iterable"});
    std::string out;
    bool first = true;
    for (const Value& item : iterate(b.required(0))) {
      if (!item.is_string())
        throw_type_error("sequence item: expected str instance, " + python_type_name(item) + " found");
      if (!first) out += s;
      first = false;
      out += item.as_string();
      if (out.size() > r.options().max_output_bytes) throw JinjaError("LimitExceeded", "joined string too long");
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(str_format(s, args));
  if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder b(fn, args, {"affix"});
    const std::string& affix = str_arg(b.required(0), "argument");
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) return Value(s.substr(affix.size()));
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
      return Value(s.substr(0, s.size() - affix.size()));
    return Value(s);
  }
  if (name == "partition" || name == "rpartition") {
    ArgBinder b(fn, args, {"sep"});
    const std::string& sep = str_arg(b.required(0), "sep");
    if (sep.empty()) throw_value_error("empty separator");
    const size_t hit = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (hit == std::string::npos) {
      return name == "partition" ? Value::tuple({Value(s), Value(""), Value("")})
                                 : Value::tuple({Value(""), Value(""), Value(s)});
    }
    return Value::tuple({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))});
  }
  if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
    ArgBinder b(fn, args, name == "zfill" ? std::initializer_list<std::string_view>{"width"}
                                          : std::initializer_list<std::string_view>{"width", "fillchar"});
    const int64_t width = method_int_arg(b.required(0));
    if (width > static_cast<int64_t>(r.options().max_output_bytes)) throw JinjaError("LimitExceeded", "width too large");
    const std::string fill = name == "zfill" ? "0" : (b.has(1) ? str_arg(b.get(1), "fillchar") : " ");
    if (py::length(fill) != 1) throw_type_error("The fill character must be exactly one character long");
    const int64_t len = static_cast<int64_t>(py::length(s));
    if (width <= len) return Value(s);
    const int64_t pad = width - len;
    int64_t left = 0;
    if (name == "center") {
      left = pad / 2 + (pad & width & 1);  // CPython's pad()
    } else if (name == "rjust" || name == "zfill") {
      left = pad;
    }
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    if (name == "zfill" && !s.empty() && (s[0] == '+' || s[0] == '-')) {
      out = s.substr(0, 1) + out + s.substr(1);
      return Value(out);
    }
    out += s;
    for (int64_t i = 0; i < pad - left; ++i) out += fill;
    return Value(std::move(out));
  }
  if (name == "expandtabs") throw_value_error("str.expandtabs is not supported");
  if (name == "encode") throw_value_error("str.encode is not supported");
  // The is* predicates.
  const std::u32string cps = py::decode_utf8(s);
  auto all = [&](auto pred) { return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred); };
  auto is_digit = [](char32_t c) { return c >= '0' && c <= '9'; };
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return Value(all(is_digit));
  if (name == "isalpha") return Value(all(py::is_alpha));
  if (name == "isalnum") return Value(all([&](char32_t c) { return py::is_alpha(c) || is_digit(c); }));
  if (name == "isspace") return Value(all(py::is_space));
  if (name == "isascii") return Value(py::is_ascii(s));
  if (name == "isidentifier") {
    return Value(!cps.empty() && !is_digit(cps[0]) &&
                 std::all_of(cps.begin(), cps.end(), [&](char32_t c) { return c == '_' || py::is_alpha(c) || is_digit(c); }));
  }
  if (name == "islower" || name == "isupper") {
    bool cased = false;
    for (char32_t c : cps) {
      const bool lower = py::to_upper(c) != c;
      const bool upper = py::to_lower(c) != c;
      if ((name == "islower" && upper) || (name == "isupper" && lower)) return Value(false);
      cased = cased || lower || upper;
    }
    return Value(cased);
  }
  if (name == "istitle") return Value(!s.empty() && py::title(s) == s && py::lower(s) != s);
  throw_type_error("str." + std::string(name) + " is not supported");
}

Value call_dict_method(const Value& self, std::string_view name, CallArgs& args) {
  const Dict& d = self.as_dict();
  const std::string fn = "dict." + std::string(name);
  if (name == "get") {
    ArgBinder b(fn, args, {"key", "default"});
    const Value& key = b.required(0);
    if (!is_hashable(key)) throw_type_error("unhashable type: '" + python_type_name(key) + "'");
    if (const Value* v = d.find(key)) return *v;
    return b.get_or(1, Value::none());
  }
  ArgBinder b(fn, args, {});
  if (name == "copy") return self;
  std::vector<Value> out;
  out.reserve(d.size());
  for (const auto& [k, v] : d.entries()) {
    if (name == "items") {
      out.push_back(Value::tuple({k, v}));
    } else {
      out.push_back(name == "keys" ? k : v);
    }
  }
  return Value::list(std::move(out));
}

Value call_list_method(const Value& self, std::string_view name, CallArgs& args) {
  const List& l = self.as_list();
  const std::string fn = std::string(l.is_tuple ? "tuple." : "list.") + std::string(name);
  if (name == "copy") {
    ArgBinder b(fn, args, {});
    return self;
  }
  ArgBinder b(fn, args, {"value"});
  const Value& value = b.required(0);
  int64_t count = 0;
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (!equals(l.items[i], value)) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") throw_value_error(repr(value) + " is not in list");
  return Value(count);
}

}  // namespace

std::optional<Value> find_method(const Value& self, std::string_view name) {
  switch (self.kind()) {
    case Value::Kind::kString:
      if (one_of(kStrMethods, name)) return bound(self, name);
      return std::nullopt;
    case Value::Kind::kDict:
      if (one_of(kDictMethods, name)) return bound(self, name);
      if (one_of(kDictMutators, name)) return unsafe(self, name);
      return std::nullopt;
    case Value::Kind::kList:
      if (one_of(kListMethods, name) && (name != "copy" || !self.as_list().is_tuple)) return bound(self, name);
      if (!self.as_list().is_tuple && one_of(kListMutators, name)) return unsafe(self, name);
      return std::nullopt;
    default: return std::nullopt;
  }
}

Value call_method(Renderer& renderer, const Value& self, std::string_view name, CallArgs& args) {
  switch (self.kind()) {
    case Value::Kind::kString: return call_str_method(renderer, self.as_string(), name, args);
    case Value::Kind::kDict: return call_dict_method(self, name, args);
    case Value::Kind::kList: return call_list_method(self, name, args);
    default: throw_type_error("no method " + std::string(name));
  }
}

}  // namespace pagoda::jinja
