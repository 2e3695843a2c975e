#include "jinja/objects.h"

#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

ArgBinder::ArgBinder(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params)
    : function_(function), params_(params), slots_(params.size()) {
  if (args.positional.size() > params_.size())
    throw_type_error(function_ + "() takes at most " + std::to_string(params_.size()) + " argument(s) (" +
                     std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) slots_[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < params_.size() && params_[i] != key) ++i;
    if (i == params_.size()) throw_type_error(function_ + "() got an unexpected keyword argument '" + key + "'");
    if (slots_[i]) throw_type_error(function_ + "() got multiple values for argument '" + key + "'");
    slots_[i] = value;
  }
}

const Value& ArgBinder::required(size_t i) const {
  if (!has(i)) throw_type_error(function_ + "() missing required argument '" + std::string(params_[i]) + "'");
  return get(i);
}

std::string Namespace::to_string() const {
  // Python's dict repr prints a dict it is already printing as {...}; a namespace holding itself shows that way.
  thread_local std::vector<const Namespace*> printing;
  if (std::find(printing.begin(), printing.end(), this) != printing.end()) return "<Namespace {...}>";
  printing.push_back(this);
  struct Pop {
    ~Pop() { printing.pop_back(); }
  } pop;
  return "<Namespace " + repr(Value::dict(attrs_)) + ">";
}

std::optional<Value> Namespace::attribute(std::string_view name) const {
  if (const Value* v = attrs_.find(name)) return *v;
  return std::nullopt;
}

std::string BoundMethod::to_string() const {
  return "<built-in method " + name_ + " of " + python_type_name(self_) + " object>";
}

Value BoundMethod::call(Renderer& renderer, CallArgs& args) { return call_method(renderer, self_, name_, args); }

}  // namespace pagoda::jinja
