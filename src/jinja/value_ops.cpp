#include "jinja/value_ops.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/objects.h"
#include "jinja/python_text.h"

namespace pagoda::jinja {

namespace {

constexpr int kMaxReprDepth = 100;

[[noreturn]] void throw_undefined(const Value& v) { throw JinjaError(v.undefined_error(), v.undefined_message()); }

[[noreturn]] void throw_overflow() { throw JinjaError("OverflowError", "integer result does not fit in 64 bits"); }

[[noreturn]] void throw_zero_division(const std::string& message) { throw JinjaError("ZeroDivisionError", message); }

bool is_int_like(const Value& v) { return v.is_int() || v.is_bool(); }

int64_t int_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }

double double_of(const Value& v) { return v.is_float() ? v.as_float() : static_cast<double>(int_of(v)); }

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  throw_type_error(std::string("unsupported operand type(s) for ") + op + ": '" + python_type_name(a) + "' and '" +
                   python_type_name(b) + "'");
}

void repr_into(const Value& v, std::string& out, int depth);

void repr_items(const std::vector<Value>& items, std::string& out, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    repr_into(items[i], out, depth + 1);
  }
}

void repr_into(const Value& v, std::string& out, int depth) {
  if (depth > kMaxReprDepth) throw JinjaError("RecursionError", "maximum recursion depth exceeded in repr");
  switch (v.kind()) {
    case Value::Kind::kUndefined: out += "Undefined"; return;
    case Value::Kind::kString: out += py::repr_string(v.as_string()); return;
    case Value::Kind::kList: {
      const List& l = v.as_list();
      out += l.is_tuple ? '(' : '[';
      repr_items(l.items, out, depth);
      if (l.is_tuple && l.items.size() == 1) out += ',';
      out += l.is_tuple ? ')' : ']';
      return;
    }
    case Value::Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, val] : v.as_dict().entries()) {
        if (!first) out += ", ";
        first = false;
        repr_into(k, out, depth + 1);
        out += ": ";
        repr_into(val, out, depth + 1);
      }
      out += '}';
      return;
    }
    case Value::Kind::kObject: out += v.as_object()->to_string(); return;
    default: out += to_str(v); return;
  }
}

// Python's slice.indices(): the code point / item positions a slice selects.
std::vector<int64_t> slice_positions(int64_t len, const Value& start_v, const Value& stop_v, const Value& step_v) {
  const int64_t step = step_v.is_none() ? 1 : int_of(step_v);
  if (step == 0) throw_value_error("slice step cannot be zero");
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = int_of(v);
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  const int64_t start = adjust(start_v, step < 0 ? len - 1 : 0);
  const int64_t stop = adjust(stop_v, step < 0 ? -1 : len);
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = start; i < stop; i += step) out.push_back(i);
  } else {
    for (int64_t i = start; i > stop; i += step) out.push_back(i);
  }
  return out;
}

Value missing_attribute(const Value& obj, std::string_view name) {
  return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + std::string(name) + "'");
}

Value missing_element(const Value& obj, const Value& key) {
  return Value::undefined(object_type_repr(obj) + " has no element " + repr(key));
}

}  // namespace

std::string python_type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return v.as_list().is_tuple ? "tuple" : "list";
    case Value::Kind::kDict: return "dict";
    case Value::Kind::kObject: return v.as_object()->type_name();
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return python_type_name(v) + " object";
}

void require_defined(const Value& v) {
  if (v.is_undefined()) throw_undefined(v);
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return false;
    case Value::Kind::kBool: return v.as_bool();
    case Value::Kind::kInt: return v.as_int() != 0;
    case Value::Kind::kFloat: return v.as_float() != 0.0;
    case Value::Kind::kString: return !v.as_string().empty();
    case Value::Kind::kList: return !v.as_list().items.empty();
    case Value::Kind::kDict: return !v.as_dict().empty();
    case Value::Kind::kObject: return true;
  }
  return true;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (is_int_like(a) && is_int_like(b)) return int_of(a) == int_of(b);
    return double_of(a) == double_of(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (other == nullptr || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kObject: return a.as_object() == b.as_object();
    default: return false;
  }
}

bool compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) throw_undefined(a);
  if (b.is_undefined()) throw_undefined(b);
  auto result = [&](int c) {  // c: <0, 0, >0
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  };
  if (a.is_number() && b.is_number()) {
    if (is_int_like(a) && is_int_like(b)) {
      const int64_t x = int_of(a), y = int_of(b);
      return result(x < y ? -1 : x > y ? 1 : 0);
    }
    const double x = double_of(a), y = double_of(b);
    if (std::isnan(x) || std::isnan(y)) return false;
    return result(x < y ? -1 : x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return result(c);
  }
  if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return compare(x[i], y[i], op);
    return result(x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0);
  }
  throw_type_error("'" + std::string(op) + "' not supported between instances of '" + python_type_name(a) + "' and '" +
                   python_type_name(b) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;  // iterating Undefined yields nothing
    case Value::Kind::kString:
      if (!item.is_string())
        throw_type_error("'in <string>' requires string as left operand, not " + python_type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list().items)
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::kDict:
      if (!is_hashable(item)) throw_type_error("unhashable type: '" + python_type_name(item) + "'");
      return container.as_dict().find(item) != nullptr;
    default:
      throw_type_error("argument of type '" + python_type_name(container) + "' is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(py::length(v.as_string()));
    case Value::Kind::kList: return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().size());
    default: throw_type_error("object of type '" + python_type_name(v) + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return v.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& [k, val] : v.as_dict().entries()) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = v.as_string();
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        py::next_code_point(s, i);
        chars.emplace_back(s.substr(start, i - start));
      }
      return chars;
    }
    default: throw_type_error("'" + python_type_name(v) + "' object is not iterable");
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return py::float_repr(v.as_float());
    case Value::Kind::kString: return v.as_string();
    default: return repr(v);
  }
}

std::string repr(const Value& v) {
  // Objects print their contents through repr() again (a namespace can contain itself): count those levels too.
  thread_local int nesting = 0;
  struct Guard {
    Guard() { ++nesting; }
    ~Guard() { --nesting; }
  } guard;
  if (nesting > 10) throw JinjaError("RecursionError", "maximum recursion depth exceeded in repr");
  std::string out;
  repr_into(v, out, 0);
  return out;
}

Value add(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (is_int_like(a) && is_int_like(b)) {
      int64_t r;
      if (__builtin_add_overflow(int_of(a), int_of(b), &r)) throw_overflow();
      return Value(r);
    }
    return Value(double_of(a) + double_of(b));
  }
  if (a.is_string()) {
    if (!b.is_string()) throw_type_error("can only concatenate str (not \"" + python_type_name(b) + "\") to str");
    return Value(a.as_string() + b.as_string());
  }
  if (a.is_list()) {
    const List& x = a.as_list();
    if (!b.is_list() || b.as_list().is_tuple != x.is_tuple) {
      const char* t = x.is_tuple ? "tuple" : "list";
      throw_type_error(std::string("can only concatenate ") + t + " (not \"" + python_type_name(b) + "\") to " + t);
    }
    std::vector<Value> items = x.items;
    items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
    return x.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  unsupported("+", a, b);
}

Value subtract(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (!a.is_number() || !b.is_number()) unsupported("-", a, b);
  if (is_int_like(a) && is_int_like(b)) {
    int64_t r;
    if (__builtin_sub_overflow(int_of(a), int_of(b), &r)) throw_overflow();
    return Value(r);
  }
  return Value(double_of(a) - double_of(b));
}

Value multiply(const Value& a, const Value& b, size_t max_bytes) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (is_int_like(a) && is_int_like(b)) {
      int64_t r;
      if (__builtin_mul_overflow(int_of(a), int_of(b), &r)) throw_overflow();
      return Value(r);
    }
    return Value(double_of(a) * double_of(b));
  }
  // Sequence repetition: str * int, int * str, list * int, int * list.
  const Value& seq = a.is_number() ? b : a;
  const Value& times = a.is_number() ? a : b;
  if (!is_int_like(times) || !(seq.is_string() || seq.is_list())) {
    if (seq.is_string() || seq.is_list())
      throw_type_error("can't multiply sequence by non-int of type '" + python_type_name(times) + "'");
    unsupported("*", a, b);
  }
  const int64_t n = std::max<int64_t>(0, int_of(times));
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (n > 0 && s.size() > max_bytes / static_cast<size_t>(n))
      throw JinjaError("MemoryError", "string repetition result too large");
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const List& l = seq.as_list();
  if (n > 0 && l.items.size() > max_bytes / 16 / static_cast<size_t>(n))
    throw JinjaError("MemoryError", "list repetition result too large");
  std::vector<Value> items;
  for (int64_t i = 0; i < n; ++i) items.insert(items.end(), l.items.begin(), l.items.end());
  return l.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value true_divide(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (!a.is_number() || !b.is_number()) unsupported("/", a, b);
  if (double_of(b) == 0.0) throw_zero_division(is_int_like(a) && is_int_like(b) ? "division by zero" : "float division by zero");
  return Value(double_of(a) / double_of(b));
}

namespace {

// CPython's float_divmod.
std::pair<double, double> float_divmod(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return {floordiv, mod};
}

}  // namespace

Value floor_divide(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (!a.is_number() || !b.is_number()) unsupported("//", a, b);
  if (is_int_like(a) && is_int_like(b)) {
    const int64_t x = int_of(a), y = int_of(b);
    if (y == 0) throw_zero_division("integer division or modulo by zero");
    if (x == std::numeric_limits<int64_t>::min() && y == -1) throw_overflow();
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return Value(q);
  }
  if (double_of(b) == 0.0) throw_zero_division("float floor division by zero");
  return Value(float_divmod(double_of(a), double_of(b)).first);
}

Value modulo(const Value& a, const Value& b) {
  require_defined(a);
  if (a.is_string()) {
    require_defined(b);
    return Value(percent_format(a.as_string(), b));
  }
  require_defined(b);
  if (!a.is_number() || !b.is_number()) unsupported("%", a, b);
  if (is_int_like(a) && is_int_like(b)) {
    const int64_t x = int_of(a), y = int_of(b);
    if (y == 0) throw_zero_division("integer division or modulo by zero");
    if (y == -1) return Value(int64_t{0});
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value(r);
  }
  if (double_of(b) == 0.0) throw_zero_division("float modulo");
  return Value(float_divmod(double_of(a), double_of(b)).second);
}

Value power(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (!a.is_number() || !b.is_number()) unsupported("** or pow()", a, b);
  if (is_int_like(a) && is_int_like(b) && int_of(b) >= 0) {
    int64_t base = int_of(a), exp = int_of(b), r = 1;
    while (exp > 0) {
      if (exp & 1)
        if (__builtin_mul_overflow(r, base, &r)) throw_overflow();
      exp >>= 1;
      if (exp > 0 && __builtin_mul_overflow(base, base, &base)) throw_overflow();
    }
    return Value(r);
  }
  const double x = double_of(a), y = double_of(b);
  if (x == 0.0 && y < 0) throw_zero_division("0.0 cannot be raised to a negative power");
  return Value(std::pow(x, y));
}

Value negate(const Value& v) {
  require_defined(v);
  if (is_int_like(v)) {
    if (int_of(v) == std::numeric_limits<int64_t>::min()) throw_overflow();
    return Value(-int_of(v));
  }
  if (v.is_float()) return Value(-v.as_float());
  throw_type_error("bad operand type for unary -: '" + python_type_name(v) + "'");
}

Value unary_plus(const Value& v) {
  require_defined(v);
  if (is_int_like(v)) return Value(int_of(v));
  if (v.is_float()) return v;
  throw_type_error("bad operand type for unary +: '" + python_type_name(v) + "'");
}

Value get_attribute(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) throw_undefined(obj);
  if (obj.is_object()) {
    if (auto attr = obj.as_object()->attribute(name)) return *attr;
    return missing_attribute(obj, name);
  }
  if (auto method = find_method(obj, name)) return *method;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  }
  return missing_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw_undefined(obj);
  switch (obj.kind()) {
    case Value::Kind::kDict:
      if (is_hashable(key)) {
        if (const Value* v = obj.as_dict().find(key)) return *v;
      }
      break;
    case Value::Kind::kList:
      if (is_int_like(key)) {
        const auto& items = obj.as_list().items;
        int64_t i = int_of(key);
        if (i < 0) i += static_cast<int64_t>(items.size());
        if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[static_cast<size_t>(i)];
        return missing_element(obj, key);
      }
      break;
    case Value::Kind::kString:
      if (is_int_like(key)) {
        const std::string& s = obj.as_string();
        const int64_t len = static_cast<int64_t>(py::length(s));
        int64_t i = int_of(key);
        if (i < 0) i += len;
        if (i < 0 || i >= len) return missing_element(obj, key);
        if (py::is_ascii(s)) return Value(s.substr(static_cast<size_t>(i), 1));
        std::string out;
        py::append_utf8(out, py::decode_utf8(s)[static_cast<size_t>(i)]);
        return Value(std::move(out));
      }
      break;
    case Value::Kind::kObject:
      if (key.is_string()) {
        if (auto attr = obj.as_object()->attribute(key.as_string())) return *attr;
      }
      break;
    default: break;
  }
  // jinja2 falls back to getattr for str keys (so x['items'] can find a method).
  if (key.is_string()) {
    if (!obj.is_object()) {
      if (auto method = find_method(obj, key.as_string())) return *method;
    }
    return missing_attribute(obj, key.as_string());
  }
  return missing_element(obj, key);
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) throw_undefined(obj);
  for (const Value* bound : {&start, &stop, &step}) {
    // A bound that is not an int (or None) is a TypeError, which jinja2's getitem turns into Undefined.
    if (!bound->is_none() && !is_int_like(*bound)) return Value::undefined("slice indices must be integers or None");
  }
  if (obj.is_list()) {
    const List& l = obj.as_list();
    std::vector<Value> items;
    for (int64_t i : slice_positions(static_cast<int64_t>(l.items.size()), start, stop, step))
      items.push_back(l.items[static_cast<size_t>(i)]);
    return l.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    if (py::is_ascii(s)) {
      std::string out;
      for (int64_t i : slice_positions(static_cast<int64_t>(s.size()), start, stop, step))
        out.push_back(s[static_cast<size_t>(i)]);
      return Value(std::move(out));
    }
    const std::u32string cps = py::decode_utf8(s);
    std::string out;
    for (int64_t i : slice_positions(static_cast<int64_t>(cps.size()), start, stop, step))
      py::append_utf8(out, cps[static_cast<size_t>(i)]);
    return Value(std::move(out));
  }
  return Value::undefined(object_type_repr(obj) + " is not subscriptable by a slice");
}

std::optional<double> as_double(const Value& v) {
  if (!v.is_number()) return std::nullopt;
  return double_of(v);
}

std::optional<int64_t> as_integer(const Value& v) {
  if (!is_int_like(v)) return std::nullopt;
  return int_of(v);
}

bool is_hashable(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kList:
      if (!v.as_list().is_tuple) return false;
      for (const Value& item : v.as_list().items)
        if (!is_hashable(item)) return false;
      return true;
    case Value::Kind::kDict: return false;
    default: return true;
  }
}

std::string percent_format(const std::string& format, const Value& args) {
  std::vector<Value> values;
  if (args.is_list() && args.as_list().is_tuple) {
    values = args.as_list().items;
  } else {
    values.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) throw_value_error("incomplete format");
    const char conv = format[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) throw_type_error("not enough arguments for format string");
    const Value& v = values[next++];
    char buf[64];
    switch (conv) {
      case 's': out += to_str(v); break;
      case 'r': out += repr(v); break;
      case 'd':
      case 'i':
        if (!v.is_number()) throw_type_error("%" + std::string(1, conv) + " format: a real number is required, not " +
                                             python_type_name(v));
        out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_float()) : int_of(v));
        break;
      case 'f':
        if (!v.is_number()) throw_type_error("must be real number, not " + python_type_name(v));
        std::snprintf(buf, sizeof buf, "%f", double_of(v));
        out += buf;
        break;
      case 'x':
        if (!is_int_like(v)) throw_type_error("%x format: an integer is required, not " + python_type_name(v));
        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(int_of(v)));
        out += buf;
        break;
      default: throw_value_error(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (next < values.size() && args.is_list() && args.as_list().is_tuple)
    throw_type_error("not all arguments converted during string formatting");
  return out;
}

}  // namespace pagoda::jinja
