// JinjaError: how the lexer, parser and renderer report a failure from deep inside a template (jinja2's
// TemplateSyntaxError, TypeError, UndefinedError, SecurityError, the TemplateError of raise_exception, a broken
// limit). It is thrown inside src/jinja only: parse_template and Template::render catch it and return an Error, so nothing throws across the
// public API. Exceptions are used here instead of Result<T> because nearly every operation of the tree walker can
// fail, and threading a Result through every operator, filter and method would double the code.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace pagoda::jinja {

class JinjaError : public std::runtime_error {
 public:
  // kind: jinja2's exception class name ("TypeError", "UndefinedError", "TemplateError", ...), which callers can
  // see as Error::code.
  JinjaError(std::string kind, const std::string& message) : std::runtime_error(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

[[noreturn]] inline void throw_type_error(const std::string& message) { throw JinjaError("TypeError", message); }
[[noreturn]] inline void throw_value_error(const std::string& message) { throw JinjaError("ValueError", message); }

}  // namespace pagoda::jinja
