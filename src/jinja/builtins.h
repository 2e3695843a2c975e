// The names a template can use beyond its variables: jinja2's builtin filters and tests, the global functions
// (jinja2's plus the ones transformers adds), and the Python methods of str, dict and list.
#pragma once

#include <optional>
#include <string_view>

#include "jinja/objects.h"
#include "jinja/value.h"

namespace pagoda::jinja {

using FilterFn = Value (*)(Renderer&, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Renderer&, const Value& subject, CallArgs& args);

// nullptr when there is no such filter / test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// range, dict, namespace, cycler, joiner, lipsum (jinja2) and raise_exception, strftime_now (transformers);
// nullopt for other names.
std::optional<Value> find_global(std::string_view name);

// self.name for a Python method of str, dict or list: a bound method; an Undefined that fails when called for the
// mutating methods the immutable sandbox forbids (list.append, dict.update, ...); nullopt when there is none.
std::optional<Value> find_method(const Value& self, std::string_view name);
Value call_method(Renderer& renderer, const Value& self, std::string_view name, CallArgs& args);

}  // namespace pagoda::jinja
