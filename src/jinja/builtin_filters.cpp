// jinja2's builtin filters (jinja2/filters.py), with transformers' tojson. Each follows the Python function of the
// same name; comments note where a filter returns a list where jinja2 returns a generator (only printing such a
// value directly would show the difference).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/json_dump.h"
#include "jinja/python_text.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

namespace {

[[noreturn]] void filter_argument_error(const std::string& message) {
  throw JinjaError("FilterArgumentError", message);
}

int64_t int_arg(const Value& v, const char* what) {
  const auto i = as_integer(v);
  if (!i) throw_type_error(std::string(what) + ": '" + python_type_name(v) + "' object cannot be interpreted as an integer");
  return *i;
}

// jinja2's ignore_case: lower-cases strings, leaves other values alone.
Value ignore_case(const Value& v) { return v.is_string() ? Value(py::lower(v.as_string())) : v; }

// jinja2's make_attrgetter: "a.b.0" looks up item a, then b, then index 0 (environment.getitem for each part).
struct AttrGetter {
  std::vector<Value> parts;
  Value default_value;  // used for an undefined result when not undefined itself
  bool has_default = false;

  explicit AttrGetter(const Value& attribute) {
    if (attribute.is_none() || attribute.is_undefined()) return;
    if (!attribute.is_string()) {
      parts.push_back(attribute);
      return;
    }
    for (const std::string& part : py::split(attribute.as_string(), std::string("."), -1)) {
      const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits && part.size() < 18) {
        parts.emplace_back(static_cast<int64_t>(std::stoll(part)));
      } else {
        parts.emplace_back(part);
      }
    }
  }

  Value operator()(Value item) const {
    for (const Value& part : parts) {
      item = get_item(item, part);
      if (has_default && item.is_undefined()) item = default_value;
    }
    return item;
  }
};

// The items a filter iterates; like Python's iter(), None and numbers are TypeErrors.
std::vector<Value> items_of(const Value& v) { return iterate(v); }

// Python's str.strip() of whitespace, then the syntax int()/float() accept: digits with single underscores.
bool valid_digits(std::string_view s, bool (*digit)(char)) {
  if (s.empty() || s.front() == '_' || s.back() == '_') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (s[i + 1] == '_') return false;
    } else if (!digit(s[i])) {
      return false;
    }
  }
  return true;
}

bool dec_digit(char c) { return c >= '0' && c <= '9'; }

std::string without_underscores(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(c);
  return out;
}

// Python's int(str, base) for bases 2, 8, 10 and 16; nullopt where Python raises ValueError (or the value does not
// fit in 64 bits).
std::optional<int64_t> parse_python_int(const std::string& text, int64_t base) {
  std::string s = py::strip(text, std::nullopt, true, true);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  if (base == 16 || base == 8 || base == 2) {
    const char p = base == 16 ? 'x' : base == 8 ? 'o' : 'b';
    if (s.size() > 2 && s[0] == '0' && (s[1] | 0x20) == p) {
      s.erase(0, 2);
      if (!s.empty() && s[0] == '_') s.erase(0, 1);
    }
  } else if (base != 10) {
    return std::nullopt;
  }
  auto digit = base == 16   ? +[](char c) { return dec_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
               : base == 8  ? +[](char c) { return c >= '0' && c <= '7'; }
               : base == 2  ? +[](char c) { return c == '0' || c == '1'; }
                            : +[](char c) { return dec_digit(c); };
  if (!valid_digits(s, digit)) return std::nullopt;
  const std::string digits = without_underscores(s);
  uint64_t v = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v, static_cast<int>(base));
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) return std::nullopt;
  if (v > static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

// Python's float(str); nullopt where Python raises ValueError.
std::optional<double> parse_python_float(const std::string& text) {
  std::string s = py::strip(text, std::nullopt, true, true);
  std::string body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.erase(0, 1);
  }
  const std::string lower = py::lower(body);
  if (lower == "inf" || lower == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
  if (lower == "nan") return std::nan("");
  // digits [. digits] [e [sign] digits], with at least one digit in the mantissa.
  size_t i = 0;
  auto digits = [&](size_t& p) {
    const size_t start = p;
    while (p < body.size() && (dec_digit(body[p]) || body[p] == '_')) ++p;
    return valid_digits(std::string_view(body).substr(start, p - start), dec_digit) || p == start;
  };
  const size_t int_start = i;
  if (!digits(i)) return std::nullopt;
  bool mantissa = i > int_start;
  if (i < body.size() && body[i] == '.') {
    ++i;
    const size_t frac_start = i;
    if (!digits(i)) return std::nullopt;
    mantissa = mantissa || i > frac_start;
  }
  if (!mantissa) return std::nullopt;
  if (i < body.size() && (body[i] | 0x20) == 'e') {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    const size_t exp_start = i;
    if (!digits(i) || i == exp_start) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  const std::string clean = without_underscores(body);
  double v = 0;
  const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (res.ec == std::errc::result_out_of_range) {
    v = std::strtod(clean.c_str(), nullptr);  // huge → inf, tiny → 0, as Python
  } else if (res.ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

// Python's round(x, ndigits) for a float: the correctly rounded decimal (glibc's printf rounds the exact binary
// value half to even, as CPython's dtoa does).
double python_round(double x, int64_t ndigits) {
  if (!std::isfinite(x) || ndigits > 308) return x;
  if (ndigits < -308) return std::copysign(0.0, x);
  if (ndigits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-ndigits));
  const double y = x / scale;
  double r = std::nearbyint(y);  // half to even in the default rounding mode
  return r * scale;
}

// ---- the filters ----

Value f_abs(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("abs", args, {});
  require_defined(v);
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (auto i = as_integer(v)) {
    if (*i == INT64_MIN) throw JinjaError("OverflowError", "integer result does not fit in 64 bits");
    return Value(*i < 0 ? -*i : *i);
  }
  throw_type_error("bad operand type for abs(): '" + python_type_name(v) + "'");
}

Value f_attr(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("attr", args, {"name"});
  const std::string name = to_str(b.required(0));
  require_defined(v);
  // Unlike obj.name, the attr filter does not fall back to item lookup.
  if (v.is_object()) {
    if (auto a = v.as_object()->attribute(name)) return *a;
  } else if (auto m = find_method(v, name)) {
    return *m;
  }
  return Value::undefined("'" + object_type_repr(v) + "' has no attribute '" + name + "'");
}

Value f_batch(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("batch", args, {"linecount", "fill_with"});
  const int64_t n = int_arg(b.required(0), "batch");
  if (n <= 0) throw_value_error("batch size must be positive");
  std::vector<Value> out, row;
  for (Value& item : items_of(v)) {
    if (static_cast<int64_t>(row.size()) == n) {
      out.push_back(Value::list(std::move(row)));
      row.clear();
    }
    row.push_back(std::move(item));
  }
  if (!row.empty()) {
    if (b.has(1) && !b.get(1).is_none())
      while (static_cast<int64_t>(row.size()) < n) row.push_back(b.get(1));
    out.push_back(Value::list(std::move(row)));
  }
  return Value::list(std::move(out));
}

Value f_capitalize(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("capitalize", args, {});
  return Value(py::capitalize(to_str(v)));
}

Value f_center(Renderer& r, const Value& v, CallArgs& args) {
  ArgBinder b("center", args, {"width"});
  CallArgs method_args;
  method_args.positional.push_back(b.get_or(0, Value(int64_t{80})));
  return call_method(r, Value(to_str(v)), "center", method_args);
}

Value f_default(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("default", args, {"default_value", "boolean"});
  const bool boolean = b.has(1) && truthy(b.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return b.get_or(0, Value(""));
  return v;
}

Value f_dictsort(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = b.has(0) && truthy(b.get(0));
  const std::string by = b.has(1) ? to_str(b.get(1)) : "key";
  const bool reverse = b.has(2) && truthy(b.get(2));
  if (by != "key" && by != "value") filter_argument_error("You can only sort by either \"key\" or \"value\"");
  require_defined(v);
  if (!v.is_dict()) throw JinjaError("UndefinedError", "'" + object_type_repr(v) + "' has no attribute 'items'");
  std::vector<std::pair<Value, Value>> items = v.as_dict().entries();
  const size_t pos = by == "key" ? 0 : 1;
  auto key = [&](const std::pair<Value, Value>& item) {
    const Value& k = pos == 0 ? item.first : item.second;
    return case_sensitive ? k : ignore_case(k);
  };
  std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b2) {
    return reverse ? compare(key(b2), key(a), "<") : compare(key(a), key(b2), "<");
  });
  std::vector<Value> out;
  for (auto& [k, val] : items) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value f_escape(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("escape", args, {});
  return Value(html_escape(to_str(v)));
}

Value f_first(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("first", args, {});
  if (v.is_string()) {
    if (v.as_string().empty()) return Value::undefined("No first item, sequence was empty.");
    size_t i = 0;
    py::next_code_point(v.as_string(), i);
    return Value(v.as_string().substr(0, i));
  }
  const std::vector<Value> items = items_of(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("last", args, {});
  const std::vector<Value> items = items_of(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_float(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("float", args, {"default"});
  const Value fallback = b.get_or(0, Value(0.0));
  require_defined(v);  // float(Undefined) raises UndefinedError, which the filter does not catch
  if (v.is_float()) return v;
  if (auto i = as_integer(v)) return Value(static_cast<double>(*i));
  if (v.is_string()) {
    if (auto d = parse_python_float(v.as_string())) return Value(*d);
  }
  return fallback;
}

Value f_int(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("int", args, {"default", "base"});
  const Value fallback = b.get_or(0, Value(int64_t{0}));
  const int64_t base = b.has(1) ? int_arg(b.get(1), "int") : 10;
  require_defined(v);
  if (auto i = as_integer(v)) return Value(*i);
  if (v.is_float()) {
    const double d = v.as_float();
    if (std::isnan(d)) return fallback;
    if (std::isinf(d) || std::fabs(d) >= 9.2e18) throw JinjaError("OverflowError", "cannot convert float to integer");
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    if (auto i = parse_python_int(v.as_string(), base)) return Value(*i);
    // "this quirk is necessary so that "42.23"|int gives 42"
    if (auto d = parse_python_float(v.as_string())) {
      if (std::isnan(*d)) return fallback;
      if (std::isinf(*d) || std::fabs(*d) >= 9.2e18)
        throw JinjaError("OverflowError", "cannot convert float to integer");
      return Value(static_cast<int64_t>(*d));
    }
  }
  return fallback;
}

Value f_format(Renderer&, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty())
    filter_argument_error("can't handle positional and keyword arguments at the same time");
  if (!args.keyword.empty()) throw_value_error("format with keyword arguments is not supported");
  return Value(percent_format(to_str(v), Value::tuple(args.positional)));
}

Value f_indent(Renderer& r, const Value& v, CallArgs& args) {
  ArgBinder b("indent", args, {"width", "first", "blank"});
  const Value width = b.get_or(0, Value(int64_t{4}));
  const bool first = b.has(1) && truthy(b.get(1));
  const bool blank = b.has(2) && truthy(b.get(2));
  std::string indention;
  if (width.is_string()) {
    indention = width.as_string();
  } else {
    const int64_t n = int_arg(width, "indent");
    if (n > static_cast<int64_t>(r.options().max_output_bytes)) throw JinjaError("LimitExceeded", "indent too wide");
    indention.assign(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
  }
  // s += "\n" happens first in jinja2, so a non-string subject is a TypeError and Undefined an UndefinedError.
  require_defined(v);
  if (!v.is_string()) throw_type_error("unsupported operand type(s) for +=: '" + python_type_name(v) + "' and 'str'");
  const std::vector<std::string> lines = py::splitlines(v.as_string() + "\n");
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
    }
  }
  if (first) rv = indention + rv;
  return Value(std::move(rv));
}

Value f_items(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("items", args, {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw_type_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict().entries()) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));  // jinja2 yields them from a generator
}

Value f_join(Renderer& r, const Value& v, CallArgs& args) {
  ArgBinder b("join", args, {"d", "attribute"});
  const std::string sep = b.has(0) ? to_str(b.get(0)) : "";
  const AttrGetter getter(b.get_or(1, Value::none()));
  std::string out;
  bool first = true;
  for (const Value& item : items_of(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(getter(item));
    if (out.size() > r.options().max_output_bytes) throw JinjaError("LimitExceeded", "joined string too long");
  }
  return Value(std::move(out));
}

Value f_length(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("length", args, {});
  return Value(length(v));
}

Value f_list(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("list", args, {});
  return Value::list(items_of(v));
}

Value f_lower(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("lower", args, {});
  return Value(py::lower(to_str(v)));
}

Value f_upper(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("upper", args, {});
  return Value(py::upper(to_str(v)));
}

Value f_map(Renderer& r, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (!truthy(v)) return Value::list({});
  if (args.positional.empty()) {
    const auto attr = std::find_if(args.keyword.begin(), args.keyword.end(), [](auto& kv) { return kv.first == "attribute"; });
    if (attr == args.keyword.end()) filter_argument_error("map requires a filter argument");
    AttrGetter getter(attr->second);
    for (const auto& [k, val] : args.keyword) {
      if (k == "default") {
        getter.default_value = val;
        getter.has_default = !val.is_none();
      } else if (k != "attribute") {
        filter_argument_error("Unexpected keyword argument '" + k + "'");
      }
    }
    for (const Value& item : items_of(v)) out.push_back(getter(item));
    return Value::list(std::move(out));
  }
  const std::string name = to_str(args.positional[0]);
  for (const Value& item : items_of(v)) {
    r.charge(1);
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.keyword = args.keyword;
    out.push_back(r.apply_filter(name, item, filter_args));
  }
  return Value::list(std::move(out));  // jinja2 yields them from a generator
}

// select / reject / selectattr / rejectattr.
Value select_or_reject(Renderer& r, const Value& v, CallArgs& args, bool want, bool lookup_attr) {
  if (!truthy(v)) return Value::list({});
  size_t off = 0;
  std::optional<AttrGetter> getter;
  if (lookup_attr) {
    if (args.positional.empty()) filter_argument_error("Missing parameter for attribute name");
    getter.emplace(args.positional[0]);
    off = 1;
  }
  std::optional<std::string> test;
  if (args.positional.size() > off) test = to_str(args.positional[off]);
  std::vector<Value> out;
  for (const Value& item : items_of(v)) {
    r.charge(1);
    const Value subject = getter ? (*getter)(item) : item;
    bool ok;
    if (test) {
      CallArgs test_args;
      test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off + 1), args.positional.end());
      test_args.keyword = args.keyword;
      ok = r.apply_test(*test, subject, test_args);
    } else {
      ok = truthy(subject);
    }
    if (ok == want) out.push_back(item);
  }
  return Value::list(std::move(out));  // jinja2 yields them from a generator
}

Value f_select(Renderer& r, const Value& v, CallArgs& a) { return select_or_reject(r, v, a, true, false); }
Value f_reject(Renderer& r, const Value& v, CallArgs& a) { return select_or_reject(r, v, a, false, false); }
Value f_selectattr(Renderer& r, const Value& v, CallArgs& a) { return select_or_reject(r, v, a, true, true); }
Value f_rejectattr(Renderer& r, const Value& v, CallArgs& a) { return select_or_reject(r, v, a, false, true); }

Value min_or_max(const Value& v, CallArgs& args, const char* name, bool want_max) {
  ArgBinder b(name, args, {"case_sensitive", "attribute"});
  const bool case_sensitive = b.has(0) && truthy(b.get(0));
  const AttrGetter getter(b.get_or(1, Value::none()));
  const std::vector<Value> items = items_of(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    Value k = getter(item);
    return case_sensitive ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? compare(k, best_key, ">") : compare(k, best_key, "<")) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(Renderer&, const Value& v, CallArgs& a) { return min_or_max(v, a, "max", true); }
Value f_min(Renderer&, const Value& v, CallArgs& a) { return min_or_max(v, a, "min", false); }

Value f_replace(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("replace", args, {"old", "new", "count"});
  const int64_t count = b.has(2) && !b.get(2).is_none() ? int_arg(b.get(2), "replace") : -1;
  return Value(py::replace(to_str(v), to_str(b.required(0)), to_str(b.required(1)), count));
}

Value f_reverse(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("reverse", args, {});
  if (v.is_string()) return get_slice(v, Value::none(), Value::none(), Value(int64_t{-1}));
  std::vector<Value> items = items_of(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));  // jinja2 returns a reverse iterator
}

Value f_round(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("round", args, {"precision", "method"});
  const int64_t precision = b.has(0) ? int_arg(b.get(0), "round") : 0;
  const std::string method = b.has(1) ? to_str(b.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    filter_argument_error("method must be common, ceil or floor");
  require_defined(v);
  if (!v.is_number()) throw_type_error("type " + python_type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (auto i = as_integer(v)) {
      if (precision >= 0) return Value(*i);
      return Value(static_cast<int64_t>(python_round(static_cast<double>(*i), precision)));
    }
    return Value(python_round(v.as_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = *as_double(v) * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("safe", args, {});
  // Markup(value): with autoescaping off (transformers' setting) a Markup string behaves as its text, except that
  // Markup + str escapes the str; that case is not modelled.
  return Value(to_str(v));
}

Value f_sort(Renderer& r, const Value& v, CallArgs& args) {
  ArgBinder b("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = b.has(0) && truthy(b.get(0));
  const bool case_sensitive = b.has(1) && truthy(b.get(1));
  std::vector<AttrGetter> getters;
  const Value attribute = b.get_or(2, Value::none());
  if (attribute.is_string()) {
    for (const std::string& part : py::split(attribute.as_string(), std::string(","), -1))
      getters.emplace_back(Value(py::strip(part, std::nullopt, true, true)));
  } else {
    getters.emplace_back(attribute);
  }
  std::vector<Value> items = items_of(v);
  r.charge(items.size() * 4);
  std::vector<std::pair<Value, Value>> keyed;  // (key, item)
  for (Value& item : items) {
    std::vector<Value> key;
    for (const AttrGetter& g : getters) key.push_back(case_sensitive ? g(item) : ignore_case(g(item)));
    keyed.emplace_back(key.size() == 1 ? std::move(key[0]) : Value::list(std::move(key)), std::move(item));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& c) {
    return reverse ? compare(c.first, a.first, "<") : compare(a.first, c.first, "<");
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value f_string(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("string", args, {});
  return Value(to_str(v));
}

Value f_sum(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("sum", args, {"attribute", "start"});
  const AttrGetter getter(b.get_or(0, Value::none()));
  Value total = b.get_or(1, Value(int64_t{0}));
  for (const Value& item : items_of(v)) total = add(total, getter(item));
  return total;
}

Value f_title(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("title", args, {});
  // jinja2 splits before runs of "-", whitespace and opening brackets, then upper-cases the first character of
  // each piece and lower-cases the rest (unlike str.title, an apostrophe does not start a word).
  const std::u32string s = py::decode_utf8(to_str(v));
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c); };
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    const bool sep = is_sep(s[i]);
    while (j < s.size() && is_sep(s[j]) == sep) ++j;
    const std::string piece = py::encode_utf8(std::u32string_view(s).substr(i, j - i));
    if (sep) {
      out += piece;
    } else {
      size_t first_end = 0;
      py::next_code_point(piece, first_end);
      out += py::upper(piece.substr(0, first_end)) + py::lower(piece.substr(first_end));
    }
    i = j;
  }
  return Value(std::move(out));
}

Value f_tojson(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = b.has(0) && truthy(b.get(0));
  if (b.has(1) && !b.get(1).is_none()) {
    const Value& indent = b.get(1);
    if (indent.is_string()) {
      o.indent = indent.as_string();
    } else {
      const int64_t n = int_arg(indent, "tojson indent");
      if (n > 1024) throw_value_error("tojson indent too large");
      o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
    }
    o.item_separator = ",";
  }
  if (b.has(2) && !b.get(2).is_none()) {
    const std::vector<Value> seps = items_of(b.get(2));
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
      throw_value_error("separators must be a pair of strings");
    o.item_separator = seps[0].as_string();
    o.key_separator = seps[1].as_string();
  }
  o.sort_keys = b.has(3) && truthy(b.get(3));
  return Value(json_dumps(v, o));
}

Value f_trim(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("trim", args, {"chars"});
  std::optional<std::string> chars;
  if (b.has(0) && !b.get(0).is_none()) chars = to_str(b.get(0));
  return Value(py::strip(to_str(v), chars, true, true));
}

Value f_truncate(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder b("truncate", args, {"length", "killwords", "end", "leeway"});
  const int64_t len = b.has(0) ? int_arg(b.get(0), "truncate") : 255;
  const bool killwords = b.has(1) && truthy(b.get(1));
  const std::string end = b.has(2) ? to_str(b.get(2)) : "...";
  const int64_t leeway = b.has(3) && !b.get(3).is_none() ? int_arg(b.get(3), "truncate") : 5;
  const int64_t end_len = static_cast<int64_t>(py::length(end));
  if (len < end_len) throw JinjaError("AssertionError", "expected length >= " + std::to_string(end_len) + ", got " + std::to_string(len));
  if (leeway < 0) throw JinjaError("AssertionError", "expected leeway >= 0, got " + std::to_string(leeway));
  const std::string s = to_str(v);
  if (static_cast<int64_t>(py::length(s)) <= len + leeway) return Value(s);
  const std::string head = get_slice(Value(s), Value::none(), Value(len - end_len), Value::none()).as_string();
  if (killwords) return Value(head + end);
  return Value(py::rsplit(head, std::string(" "), 1).front() + end);
}

Value f_unique(Renderer& r, const Value& v, CallArgs& args) {
  ArgBinder b("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = b.has(0) && truthy(b.get(0));
  const AttrGetter getter(b.get_or(1, Value::none()));
  std::vector<Value> seen, out;
  for (const Value& item : items_of(v)) {
    Value key = getter(item);
    if (!case_sensitive) key = ignore_case(key);
    if (!is_hashable(key)) throw_type_error("unhashable type: '" + python_type_name(key) + "'");
    r.charge(seen.size() / 8 + 1);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::list(std::move(out));  // jinja2 yields them from a generator
}

Value f_wordcount(Renderer&, const Value& v, CallArgs& args) {
  ArgBinder("wordcount", args, {});
  // len(re.findall(r"\w+", s)): runs of letters, digits and underscores.
  const std::u32string s = py::decode_utf8(to_str(v));
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : s) {
    const bool w = c == '_' || (c >= '0' && c <= '9') || py::is_alpha(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

constexpr NamedFilter kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_escape},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kFilters)
    if (f.name == name) return f.fn;
  return nullptr;
}

}  // namespace pagoda::jinja
