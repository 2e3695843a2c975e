// Follows jinja2/lexer.py (3.1): the regular expressions of Lexer.__init__ and the whitespace rules of tokeniter,
// written out by hand. Names of the jinja2 rules are given where each is implemented.
#include "jinja/lexer.h"

#include <charconv>
#include <cstdio>

#include "jinja/jinja_error.h"
#include "jinja/python_text.h"

namespace pagoda::jinja {

namespace {

[[noreturn]] void syntax_error(const std::string& message, int line) {
  throw JinjaError("TemplateSyntaxError", message + " (line " + std::to_string(line) + ")");
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Python's \s* (Unicode whitespace): the end of the whitespace run starting at pos.
size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size()) {
    size_t next = pos;
    if (!py::is_space(py::next_code_point(s, next))) break;
    pos = next;
  }
  return pos;
}

// str.rstrip() with no arguments.
std::string_view rstrip_space(std::string_view s) {
  const std::u32string cps = py::decode_utf8(s);
  size_t keep = cps.size();
  while (keep > 0 && py::is_space(cps[keep - 1])) --keep;
  size_t bytes = 0;
  for (size_t i = 0; i < keep; ++i) py::next_code_point(s, bytes);
  return s.substr(0, bytes);
}

// (\d+_)*\d+ at pos: its end, or npos.
size_t match_digits(std::string_view s, size_t pos, bool (*digit)(char) = is_digit) {
  if (pos >= s.size() || !digit(s[pos])) return std::string_view::npos;
  size_t p = pos;
  while (p < s.size() && digit(s[p])) ++p;
  while (p + 1 < s.size() && s[p] == '_' && digit(s[p + 1])) {
    ++p;
    while (p < s.size() && digit(s[p])) ++p;
  }
  return p;
}

// e[+\-]?(\d+_)*\d+ at pos: its end, or npos.
size_t match_exponent(std::string_view s, size_t pos) {
  if (pos >= s.size() || (s[pos] != 'e' && s[pos] != 'E')) return std::string_view::npos;
  size_t p = pos + 1;
  if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
  return match_digits(s, p);
}

// jinja2's float_re: the end of a float literal at pos, or npos.
size_t match_float(std::string_view s, size_t pos) {
  if (pos > 0 && s[pos - 1] == '.') return std::string_view::npos;  // (?<!\.)
  const size_t int_end = match_digits(s, pos);
  if (int_end == std::string_view::npos) return int_end;
  if (int_end < s.size() && s[int_end] == '.') {
    const size_t frac_end = match_digits(s, int_end + 1);
    if (frac_end != std::string_view::npos) {
      const size_t exp_end = match_exponent(s, frac_end);
      return exp_end != std::string_view::npos ? exp_end : frac_end;
    }
  }
  return match_exponent(s, int_end);
}

bool is_bin(char c) { return c == '0' || c == '1'; }
bool is_oct(char c) { return c >= '0' && c <= '7'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// (_?[digit])+ after a base prefix.
size_t match_prefixed_digits(std::string_view s, size_t pos, bool (*digit)(char)) {
  size_t p = pos;
  while (true) {
    if (p < s.size() && digit(s[p])) {
      ++p;
    } else if (p + 1 < s.size() && s[p] == '_' && digit(s[p + 1])) {
      p += 2;
    } else {
      break;
    }
  }
  return p == pos ? std::string_view::npos : p;
}

// jinja2's integer_re: the end of an integer literal at pos (npos if none), and its base.
size_t match_integer(std::string_view s, size_t pos, int& base) {
  if (pos >= s.size() || !is_digit(s[pos])) return std::string_view::npos;
  if (s[pos] == '0' && pos + 1 < s.size()) {
    const char p = static_cast<char>(s[pos + 1] | 0x20);
    bool (*digit)(char) = p == 'b' ? is_bin : p == 'o' ? is_oct : p == 'x' ? is_hex : nullptr;
    if (digit != nullptr) {
      const size_t end = match_prefixed_digits(s, pos + 2, digit);
      if (end != std::string_view::npos) {
        base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
        return end;
      }
    }
  }
  base = 10;
  if (s[pos] == '0') {  // 0(_?0)*
    size_t p = pos + 1;
    while (true) {
      if (p < s.size() && s[p] == '0') {
        ++p;
      } else if (p + 1 < s.size() && s[p] == '_' && s[p + 1] == '0') {
        p += 2;
      } else {
        break;
      }
    }
    return p;
  }
  size_t p = pos + 1;  // [1-9](_?\d)*
  while (true) {
    if (p < s.size() && is_digit(s[p])) {
      ++p;
    } else if (p + 1 < s.size() && s[p] == '_' && is_digit(s[p + 1])) {
      p += 2;
    } else {
      break;
    }
  }
  return p;
}

std::string digits_without_underscores(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(c);
  return out;
}

// Python's str.encode("ascii", "backslashreplace") of one non-ASCII code point.
std::string backslash_escape(char32_t c) {
  char buf[16];
  if (c < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
  } else if (c < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
  }
  return buf;
}

// A string literal's body → its value: jinja2 does .encode("ascii", "backslashreplace").decode("unicode-escape").
std::string unescape_string(std::string_view body, int line) {
  const std::u32string cps = py::decode_utf8(body);
  std::string out;
  auto hex_escape = [&](size_t& i, int digits, const char* what) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (i >= cps.size() || cps[i] >= 0x80 || !is_hex(static_cast<char>(cps[i])))
        syntax_error(std::string("truncated ") + what + " escape", line);
      const char c = static_cast<char>(cps[i++]);
      v = v * 16 + static_cast<uint32_t>(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (v > 0x10FFFF) syntax_error("illegal Unicode character", line);
    py::append_utf8(out, v);
  };
  for (size_t i = 0; i < cps.size();) {
    const char32_t c = cps[i++];
    if (c != '\\') {
      py::append_utf8(out, c);
      continue;
    }
    if (i >= cps.size()) syntax_error("\\ at end of string", line);
    const char32_t e = cps[i++];
    if (e >= 0x80) {
      // The backslash escapes the first character of the backslashreplace text, which is itself a backslash.
      out += backslash_escape(e);
      continue;
    }
    switch (e) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': hex_escape(i, 2, "\\xXX"); break;
      case 'u': hex_escape(i, 4, "\\uXXXX"); break;
      case 'U': hex_escape(i, 8, "\\UXXXXXXXX"); break;
      case 'N': syntax_error("\\N{...} escapes are not supported", line);
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = e - '0';
          for (int k = 0; k < 2 && i < cps.size() && cps[i] >= '0' && cps[i] <= '7'; ++k) v = v * 8 + (cps[i++] - '0');
          py::append_utf8(out, v);
        } else {
          out += '\\';
          py::append_utf8(out, e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : s_(std::move(source)) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) lex_root();
    push(Token::Type::kEof, "");
    return std::move(tokens_);
  }

 private:
  enum class Tag { kVariable, kBlock, kComment, kRaw };

  void push(Token::Type type, std::string value) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  void push_data(std::string_view text) {
    if (!text.empty()) push(Token::Type::kData, std::string(text));
    line_ += count_newlines(text);
  }

  // Whitespace control for the text in front of a tag (jinja2's OptionalLStrip): `-` strips all whitespace
  // before the tag; otherwise lstrip_blocks removes spaces and tabs between the start of the line and a block or
  // comment tag (not a {{ }} tag), unless the tag opens with `+`.
  std::string_view control_whitespace(std::string_view text, char sign, bool is_variable) const {
    if (sign == '-') return rstrip_space(text);
    if (sign == '+' || is_variable) return text;
    const size_t nl = text.rfind('\n');
    const size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
    if (line_start == 0 && !line_starting_) return text;
    for (size_t i = line_start; i < text.size(); ++i)
      if (text[i] != ' ' && text[i] != '\t') return text;
    return text.substr(0, line_start);
  }

  // {%(\-|\+|)\s*raw\s*(?:\-%}\s*|%}) at pos: its end, or npos.
  size_t match_raw_begin(size_t pos, char& sign) const {
    size_t p = pos + 2;
    sign = 0;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) sign = s_[p++];
    p = skip_space(s_, p);
    if (s_.compare(p, 3, "raw") != 0) return std::string::npos;
    p = skip_space(s_, p + 3);
    if (s_.compare(p, 3, "-%}") == 0) return skip_space(s_, p + 3);
    if (s_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  void lex_root() {
    size_t i = pos_;
    while (true) {
      i = s_.find('{', i);
      if (i == std::string::npos || i + 1 >= s_.size()) {
        push_data(std::string_view(s_).substr(pos_));
        pos_ = s_.size();
        return;
      }
      const char c = s_[i + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++i;
    }
    const std::string_view text = std::string_view(s_).substr(pos_, i - pos_);
    char raw_sign = 0;
    const size_t raw_end = s_[i + 1] == '%' ? match_raw_begin(i, raw_sign) : std::string::npos;
    if (raw_end != std::string::npos) {
      push_data(control_whitespace(text, raw_sign, false));
      line_ += count_newlines(text) - count_newlines(control_whitespace(text, raw_sign, false));
      line_ += count_newlines(std::string_view(s_).substr(i, raw_end - i));
      line_starting_ = s_[raw_end - 1] == '\n';
      pos_ = raw_end;
      lex_raw();
      return;
    }
    const Tag tag = s_[i + 1] == '{' ? Tag::kVariable : s_[i + 1] == '%' ? Tag::kBlock : Tag::kComment;
    char sign = 0;
    size_t p = i + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) sign = s_[p++];
    const std::string_view kept = control_whitespace(text, sign, tag == Tag::kVariable);
    push_data(kept);
    line_ += count_newlines(text.substr(kept.size()));
    line_starting_ = false;
    pos_ = p;
    switch (tag) {
      case Tag::kComment: lex_comment(); break;
      case Tag::kVariable:
        push(Token::Type::kVariableBegin, "{{");
        lex_tag(false);
        break;
      default:
        push(Token::Type::kBlockBegin, "{%");
        lex_tag(true);
        break;
    }
  }

  // The end of a block tag at pos_ ("+%}", "-%}" plus whitespace, or "%}" plus one newline for trim_blocks):
  // its end, or npos.
  size_t match_block_end(size_t pos) const {
    if (s_.compare(pos, 3, "+%}") == 0) return pos + 3;
    if (s_.compare(pos, 3, "-%}") == 0) return skip_space(s_, pos + 3);
    if (s_.compare(pos, 2, "%}") == 0) return (pos + 2 < s_.size() && s_[pos + 2] == '\n') ? pos + 3 : pos + 2;
    return std::string::npos;
  }

  size_t match_variable_end(size_t pos) const {
    if (s_.compare(pos, 3, "-}}") == 0) return skip_space(s_, pos + 3);
    if (s_.compare(pos, 2, "}}") == 0) return pos + 2;
    return std::string::npos;
  }

  void finish_tag(size_t end) {
    line_ += count_newlines(std::string_view(s_).substr(pos_, end - pos_));
    line_starting_ = s_[end - 1] == '\n';
    pos_ = end;
  }

  void lex_comment() {
    const int start_line = line_;
    for (size_t p = pos_; p < s_.size(); ++p) {
      size_t end = std::string::npos;
      if (s_.compare(p, 3, "+#}") == 0) {
        end = p + 3;
      } else if (s_.compare(p, 3, "-#}") == 0) {
        end = skip_space(s_, p + 3);
      } else if (s_.compare(p, 2, "#}") == 0) {
        end = (p + 2 < s_.size() && s_[p + 2] == '\n') ? p + 3 : p + 2;
      }
      if (end != std::string::npos) {
        finish_tag(end);
        return;
      }
    }
    syntax_error("Missing end of comment tag", start_line);
  }

  void lex_raw() {
    const int start_line = line_;
    for (size_t p = pos_; p + 1 < s_.size(); ++p) {
      if (s_[p] != '{' || s_[p + 1] != '%') continue;
      size_t q = p + 2;
      char sign = 0;
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) sign = s_[q++];
      q = skip_space(s_, q);
      if (s_.compare(q, 6, "endraw") != 0) continue;
      const size_t end = match_block_end(skip_space(s_, q + 6));
      if (end == std::string::npos) continue;
      const std::string_view text = std::string_view(s_).substr(pos_, p - pos_);
      const std::string_view kept = control_whitespace(text, sign, false);
      push_data(kept);
      line_ += count_newlines(text.substr(kept.size()));
      pos_ = p;
      finish_tag(end);
      return;
    }
    syntax_error("Missing end of raw directive", start_line);
  }

  void lex_tag(bool block) {
    std::vector<char> balance;  // closing brackets expected, innermost last
    while (true) {
      if (pos_ >= s_.size()) syntax_error(block ? "unexpected end of template, expected '%}'" : "unexpected end of "
                                                                                               "template, expected '}}'",
                                          line_);
      if (balance.empty()) {
        const size_t end = block ? match_block_end(pos_) : match_variable_end(pos_);
        if (end != std::string::npos) {
          push(block ? Token::Type::kBlockEnd : Token::Type::kVariableEnd, block ? "%}" : "}}");
          finish_tag(end);
          return;
        }
      }
      const size_t ws_end = skip_space(s_, pos_);
      if (ws_end > pos_) {
        finish_tag(ws_end);
        continue;
      }
      const char c = s_[pos_];
      size_t end = match_float(s_, pos_);
      if (end != std::string::npos) {
        Token t;
        t.type = Token::Type::kFloat;
        const std::string text = digits_without_underscores(std::string_view(s_).substr(pos_, end - pos_));
        std::from_chars(text.data(), text.data() + text.size(), t.float_value);
        t.value = text;
        t.line = line_;
        tokens_.push_back(std::move(t));
        pos_ = end;
        continue;
      }
      int base = 10;
      end = match_integer(s_, pos_, base);
      if (end != std::string::npos) {
        std::string text = digits_without_underscores(std::string_view(s_).substr(pos_, end - pos_));
        const size_t skip = base == 10 ? 0 : 2;
        Token t;
        t.type = Token::Type::kInteger;
        const auto res = std::from_chars(text.data() + skip, text.data() + text.size(), t.int_value, base);
        if (res.ec != std::errc()) syntax_error("integer literal too large: " + text, line_);
        t.value = text;
        t.line = line_;
        tokens_.push_back(std::move(t));
        pos_ = end;
        continue;
      }
      if (is_name_start(c)) {
        size_t e = pos_ + 1;
        while (e < s_.size() && is_name_char(s_[e])) ++e;
        push(Token::Type::kName, s_.substr(pos_, e - pos_));
        pos_ = e;
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t e = pos_ + 1;
        while (e < s_.size() && s_[e] != c) e += s_[e] == '\\' ? 2 : 1;
        if (e < s_.size()) {
          const std::string_view body = std::string_view(s_).substr(pos_ + 1, e - pos_ - 1);
          push(Token::Type::kString, unescape_string(body, line_));
          finish_tag(e + 1);
          continue;
        }
        // An unterminated string matches no rule, as in jinja2.
      }
      static constexpr std::string_view kTwoCharOps[] = {"//", "**", "==", "!=", ">=", "<="};
      bool matched = false;
      for (std::string_view op : kTwoCharOps) {
        if (s_.compare(pos_, 2, op) == 0) {
          push(Token::Type::kOperator, std::string(op));
          pos_ += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::string_view("+-/*%~[](){}=.:|,;<>").find(c) != std::string_view::npos) {
        if (c == '(' || c == '[' || c == '{') {
          balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        } else if (c == ')' || c == ']' || c == '}') {
          if (balance.empty()) syntax_error(std::string("unexpected '") + c + "'", line_);
          if (balance.back() != c)
            syntax_error(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", line_);
          balance.pop_back();
        }
        push(Token::Type::kOperator, std::string(1, c));
        ++pos_;
        continue;
      }
      size_t next = pos_;
      std::string ch;
      py::append_utf8(ch, py::next_code_point(s_, next));
      syntax_error("unexpected char " + py::repr_string(ch) + " at " + std::to_string(pos_), line_);
    }
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last match ended with a newline (jinja2's line_starting)
  std::vector<Token> tokens_;
};

// jinja2 splits on \r\n, \r and \n, joins with \n, and drops one trailing newline (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace pagoda::jinja
