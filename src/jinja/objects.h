// Host objects a template can hold as values, and the calling convention shared by macros, builtin functions,
// filters, tests and Python methods.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace pagoda::jinja {

class Renderer;

// f(a, b, key=value): positional and keyword arguments, already evaluated.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Callable : public Object {
 public:
  virtual Value call(Renderer& renderer, CallArgs& args) = 0;
};

// Binds CallArgs to a Python-style parameter list (positional-or-keyword parameters), with Python's TypeErrors
// for extra or unknown arguments.
class ArgBinder {
 public:
  ArgBinder(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params);
  bool has(size_t i) const { return slots_[i].has_value(); }
  const Value& get(size_t i) const { return *slots_[i]; }
  Value get_or(size_t i, Value fallback) const { return has(i) ? *slots_[i] : std::move(fallback); }
  // TypeError "<function>() missing required argument '<param>'" when absent.
  const Value& required(size_t i) const;

 private:
  std::string function_;
  std::vector<std::string_view> params_;
  std::vector<std::optional<Value>> slots_;
};

// jinja2's namespace(): the one mutable object ({% set ns.attr = value %} works across scopes).
class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::string to_string() const override;
  std::optional<Value> attribute(std::string_view name) const override;
  void set(const std::string& name, Value v) { attrs_.set(Value(name), std::move(v)); }
  const Dict& attributes() const { return attrs_; }
  void clear() { attrs_ = Dict(); }

 private:
  Dict attrs_;
};

// A global function: range, dict, namespace, raise_exception, strftime_now, ...
class BuiltinFunction : public Callable {
 public:
  using Fn = Value (*)(Renderer&, CallArgs&);
  BuiltinFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string to_string() const override { return "<built-in function " + name_ + ">"; }
  Value call(Renderer& renderer, CallArgs& args) override { return fn_(renderer, args); }

 private:
  std::string name_;
  Fn fn_;
};

// A method of a str, dict or list bound to its value: "abc".upper, message.get, ...
class BoundMethod : public Callable {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string to_string() const override;
  int depth() const override { return 1 + nesting_depth(self_); }
  Value call(Renderer& renderer, CallArgs& args) override;

 private:
  Value self_;
  std::string name_;
};

}  // namespace pagoda::jinja
