// jinja2's builtin tests (jinja2/tests.py): `x is defined`, `x is string`, `x is divisibleby 3`, ...
#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/python_text.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

namespace {

const Value& only_arg(const char* name, CallArgs& args) {
  if (args.positional.size() != 1 || !args.keyword.empty())
    throw_type_error(std::string(name) + "() takes exactly one argument");
  return args.positional[0];
}

void no_args(const char* name, CallArgs& args) {
  if (!args.positional.empty() || !args.keyword.empty())
    throw_type_error(std::string(name) + "() takes no arguments");
}

bool is_callable(const Value& v) {
  if (v.is_undefined()) return true;  // Undefined defines __call__
  return v.is_object() && dynamic_cast<const Callable*>(v.as_object().get()) != nullptr;
}

bool t_defined(Renderer&, const Value& v, CallArgs& a) { return no_args("defined", a), !v.is_undefined(); }
bool t_undefined(Renderer&, const Value& v, CallArgs& a) { return no_args("undefined", a), v.is_undefined(); }
bool t_none(Renderer&, const Value& v, CallArgs& a) { return no_args("none", a), v.is_none(); }
bool t_boolean(Renderer&, const Value& v, CallArgs& a) { return no_args("boolean", a), v.is_bool(); }
bool t_true(Renderer&, const Value& v, CallArgs& a) { return no_args("true", a), v.is_bool() && v.as_bool(); }
bool t_false(Renderer&, const Value& v, CallArgs& a) { return no_args("false", a), v.is_bool() && !v.as_bool(); }
bool t_integer(Renderer&, const Value& v, CallArgs& a) { return no_args("integer", a), v.is_int(); }
bool t_float(Renderer&, const Value& v, CallArgs& a) { return no_args("float", a), v.is_float(); }
bool t_number(Renderer&, const Value& v, CallArgs& a) { return no_args("number", a), v.is_number(); }
bool t_string(Renderer&, const Value& v, CallArgs& a) { return no_args("string", a), v.is_string(); }
bool t_mapping(Renderer&, const Value& v, CallArgs& a) { return no_args("mapping", a), v.is_dict(); }
bool t_callable(Renderer&, const Value& v, CallArgs& a) { return no_args("callable", a), is_callable(v); }
bool t_escaped(Renderer&, const Value&, CallArgs& a) { return no_args("escaped", a), false; }

// iter(value) succeeds: str, list, tuple, dict, and Undefined (which iterates as empty).
bool t_iterable(Renderer&, const Value& v, CallArgs& a) {
  no_args("iterable", a);
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}

// len(value) and value.__getitem__ both exist: str, list, tuple, dict, and Undefined.
bool t_sequence(Renderer&, const Value& v, CallArgs& a) {
  no_args("sequence", a);
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
}

bool t_lower(Renderer&, const Value& v, CallArgs& a) {
  no_args("lower", a);
  const std::string s = to_str(v);
  return py::lower(s) == s && py::upper(s) != s;
}

bool t_upper(Renderer&, const Value& v, CallArgs& a) {
  no_args("upper", a);
  const std::string s = to_str(v);
  return py::upper(s) == s && py::lower(s) != s;
}

bool t_odd(Renderer&, const Value& v, CallArgs& a) {
  no_args("odd", a);
  return equals(modulo(v, Value(int64_t{2})), Value(int64_t{1}));
}

bool t_even(Renderer&, const Value& v, CallArgs& a) {
  no_args("even", a);
  return equals(modulo(v, Value(int64_t{2})), Value(int64_t{0}));
}

bool t_divisibleby(Renderer&, const Value& v, CallArgs& a) {
  return equals(modulo(v, only_arg("divisibleby", a)), Value(int64_t{0}));
}

bool t_eq(Renderer&, const Value& v, CallArgs& a) { return equals(v, only_arg("eq", a)); }
bool t_ne(Renderer&, const Value& v, CallArgs& a) { return !equals(v, only_arg("ne", a)); }
bool t_lt(Renderer&, const Value& v, CallArgs& a) { return compare(v, only_arg("lt", a), "<"); }
bool t_le(Renderer&, const Value& v, CallArgs& a) { return compare(v, only_arg("le", a), "<="); }
bool t_gt(Renderer&, const Value& v, CallArgs& a) { return compare(v, only_arg("gt", a), ">"); }
bool t_ge(Renderer&, const Value& v, CallArgs& a) { return compare(v, only_arg("ge", a), ">="); }
bool t_in(Renderer&, const Value& v, CallArgs& a) { return contains(only_arg("in", a), v); }

// `value is other`: Python identity. Containers and objects compare by reference; None, booleans, numbers and
// strings by value (CPython shares small ints and interned strings, which is what templates rely on).
bool t_sameas(Renderer&, const Value& v, CallArgs& a) {
  const Value& other = only_arg("sameas", a);
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kList: return v.list_ptr() == other.list_ptr();
    case Value::Kind::kDict: return v.dict_ptr() == other.dict_ptr();
    case Value::Kind::kObject: return v.as_object() == other.as_object();
    default: return equals(v, other);
  }
}

bool t_filter(Renderer&, const Value& v, CallArgs& a) {
  no_args("filter", a);
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}

bool t_test(Renderer&, const Value& v, CallArgs& a) {
  no_args("test", a);
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

struct NamedTest {
  std::string_view name;
  TestFn fn;
};

constexpr NamedTest kTests[] = {
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"==", t_eq},
    {"escaped", t_escaped},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge},
    {">=", t_ge},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">", t_gt},
    {"in", t_in},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le},
    {"<=", t_le},
    {"lower", t_lower},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<", t_lt},
    {"mapping", t_mapping},
    {"ne", t_ne},
    {"!=", t_ne},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests)
    if (t.name == name) return t.fn;
  return nullptr;
}

}  // namespace pagoda::jinja
