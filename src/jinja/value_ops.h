// Python semantics of Values: what jinja2 delegates to Python when a template compares, adds, indexes, prints or
// iterates. Failures throw JinjaError (see jinja_error.h) with CPython's message where templates can hit them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace pagoda::jinja {

// Python's type(x).__name__ ("str", "NoneType", "dict", ..., "Undefined").
std::string python_type_name(const Value& v);
// jinja2's object_type_repr: "None", or "<type> object" ("dict object").
std::string object_type_repr(const Value& v);

// Raises jinja2's UndefinedError when v is undefined (for operations that Undefined refuses).
void require_defined(const Value& v);

bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// Python's a < b, a <= b, a > b, a >= b (op is "<", "<=", ">" or ">="); TypeError between unorderable types.
bool compare(const Value& a, const Value& b, std::string_view op);
// Python's `item in container`.
bool contains(const Value& container, const Value& item);
// len(); undefined has length 0 (jinja2's Undefined defines __len__).
int64_t length(const Value& v);
// list(v): the items a for loop visits (dict → keys, str → characters, undefined → nothing).
std::vector<Value> iterate(const Value& v);

// str(v) and repr(v). Undefined prints as "".
std::string to_str(const Value& v);
std::string repr(const Value& v);

Value add(const Value& a, const Value& b);
Value subtract(const Value& a, const Value& b);
Value multiply(const Value& a, const Value& b, size_t max_bytes);
Value true_divide(const Value& a, const Value& b);
Value floor_divide(const Value& a, const Value& b);
Value modulo(const Value& a, const Value& b);
Value power(const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);

// obj.name: jinja2's sandboxed getattr (a Python attribute such as a method first, else obj['name']).
Value get_attribute(const Value& obj, std::string_view name);
// obj[index] for int/str keys and obj[start:stop:step]; jinja2's sandboxed getitem: a failed lookup gives an
// Undefined naming what was missing rather than an error.
Value get_item(const Value& obj, const Value& key);
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Numeric value as double / int64 (bool counts as int); nullopt when v is not a number.
std::optional<double> as_double(const Value& v);
std::optional<int64_t> as_integer(const Value& v);

// Whether v can be a dict key (str, numbers, None, tuples of those).
bool is_hashable(const Value& v);
// Python's str % args (printf-style formatting: %s %r %d %i %f %x %%).
std::string percent_format(const std::string& format, const Value& args);

}  // namespace pagoda::jinja
