// Parser: tokens → syntax tree, following jinja2/parser.py rule by rule (operator precedence, what may follow
// `is`, where tuples are allowed), with the statements a chat template can use: if, for (else, `if` filter,
// recursive), set (also block set and namespace attributes), macro, call, filter, with, print, break/continue
// (jinja2.ext.loopcontrols) and transformers' {% generation %}. Template inheritance and includes (extends, block,
// include, import) are not supported: transformers configures no template loader.
#pragma once

#include <string_view>

#include "jinja/ast.h"

namespace pagoda::jinja {

struct ParseLimits {
  int max_nesting = 100;  // nested statements, and about as many nested parentheses in one expression
};

// Throws JinjaError("TemplateSyntaxError" or "TemplateAssertionError", ...) for templates jinja2 would not compile.
ast::Template parse(std::string_view source, const ParseLimits& limits = {});

}  // namespace pagoda::jinja
