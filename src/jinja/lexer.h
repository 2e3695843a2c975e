// Lexer: template source → tokens, with jinja2's whitespace handling as transformers configures it
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False). Whitespace control is decided here, the way
// jinja2's lexer does it, so the parser only sees the text that will be output.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

struct Token {
  enum class Type {
    kData,           // template text
    kVariableBegin,  // {{
    kVariableEnd,    // }}
    kBlockBegin,     // {%
    kBlockEnd,       // %}
    kName,
    kString,   // value: the decoded literal
    kInteger,  // int_value
    kFloat,    // float_value
    kOperator,  // value: the operator text ("+", "//", "(", ...)
    kEof,
  };
  Type type;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// Throws JinjaError("TemplateSyntaxError", ...) on malformed input; the last token is always kEof.
std::vector<Token> tokenize(std::string_view source);

}  // namespace pagoda::jinja
