#include "grammar/gbnf_parser.h"

#include <string>

namespace pagoda::grammar {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

class GbnfParser {
 public:
  GbnfParser(std::string_view text, GrammarLimits limits) : s_(text), b_(limits) {}

  Result<std::shared_ptr<const Grammar>> parse(std::string_view root) {
    skip_space(true);
    while (pos_ < s_.size()) {
      PAGODA_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    auto g = b_.build(std::string(root));
    if (!g.ok()) return make_error("grammar: " + g.error().message);
    return g;
  }

 private:
  Error error_at(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return make_error("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }

  // Spaces, tabs, comments; newlines too when newline_ok.
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  Result<std::string> parse_name() {
    const size_t start = pos_;
    while (!at_end() && name_char(peek())) ++pos_;
    if (pos_ == start) return error_at("expected a rule name");
    return std::string(s_.substr(start, pos_ - start));
  }

  Status parse_rule() {
    auto name = parse_name();
    if (!name.ok()) return name.error();
    skip_space(false);
    if (s_.substr(pos_, 3) != "::=") return error_at("expected '::=' after rule name '" + *name + "'");
    pos_ += 3;
    skip_space(true);
    std::vector<Sequence> alts;
    PAGODA_RETURN_IF_ERROR(parse_alternatives(alts, 0));
    const uint32_t r = b_.rule(*name);
    if (b_.defined(r)) return error_at("rule '" + *name + "' is defined twice");
    PAGODA_RETURN_IF_ERROR(b_.define(r, std::move(alts)));
    skip_space(false);
    if (!at_end() && peek() != '\n' && peek() != '\r') return error_at(std::string("unexpected '") + peek() + "'");
    return Status::success();
  }

  Status parse_alternatives(std::vector<Sequence>& alts, int depth) {
    for (;;) {
      Sequence seq;
      PAGODA_RETURN_IF_ERROR(parse_sequence(seq, depth));
      alts.push_back(std::move(seq));
      skip_space(depth > 0);
      if (peek() != '|') return Status::success();
      ++pos_;
      skip_space(true);
    }
  }

  Status parse_sequence(Sequence& seq, int depth) {
    for (;;) {
      skip_space(depth > 0);
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n' || c == '\r') return Status::success();
      // A new rule on the same line ("a ::= x b ::= y") is not GBNF: a name followed by ::= ends nothing here.
      Elem item;
      if (c == '"') {
        ++pos_;
        Sequence lit;
        while (peek() != '"') {
          if (at_end()) return error_at("unterminated string literal");
          auto cp = parse_char();
          if (!cp.ok()) return cp.error();
          lit.push_back(b_.literal_char(*cp));
        }
        ++pos_;
        if (lit.size() == 1) {
          item = lit[0];
        } else {
          // A literal is its own rule only when a repetition follows; otherwise its characters go in place.
          skip_space(depth > 0);
          if (!is_repetition(peek())) {
            seq.insert(seq.end(), lit.begin(), lit.end());
            continue;
          }
          const uint32_t r = b_.fresh_rule("literal");
          PAGODA_RETURN_IF_ERROR(b_.define(r, {lit}));
          item = GrammarBuilder::ref(r);
        }
      } else if (c == '[') {
        auto cls = parse_class();
        if (!cls.ok()) return cls.error();
        item = b_.chars(std::move(*cls));
      } else if (c == '.') {
        ++pos_;
        CharClass any;
        any.ranges.push_back({0, kMaxCodePoint});
        item = b_.chars(std::move(any));
      } else if (c == '(') {
        if (depth + 1 > kMaxGbnfNesting)
          return error_at("parentheses nest deeper than " + std::to_string(kMaxGbnfNesting));
        ++pos_;
        skip_space(true);
        std::vector<Sequence> alts;
        PAGODA_RETURN_IF_ERROR(parse_alternatives(alts, depth + 1));
        skip_space(true);
        if (peek() != ')') return error_at("expected ')'");
        ++pos_;
        const uint32_t r = b_.fresh_rule("group");
        PAGODA_RETURN_IF_ERROR(b_.define(r, std::move(alts)));
        item = GrammarBuilder::ref(r);
      } else if (name_char(c)) {
        const size_t save = pos_;
        auto name = parse_name();
        if (!name.ok()) return name.error();
        size_t look = pos_;
        while (look < s_.size() && (s_[look] == ' ' || s_[look] == '\t')) ++look;
        if (s_.substr(look, 3) == "::=") {
          pos_ = save;
          return error_at("a new rule must start on its own line");
        }
        item = GrammarBuilder::ref(b_.rule(*name));
      } else {
        return error_at(std::string("unexpected '") + c + "'");
      }
      skip_space(depth > 0);
      PAGODA_RETURN_IF_ERROR(parse_repetitions(item, seq));
    }
  }

  static bool is_repetition(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

  // Appends `item` with any repetition operators after it applied (x** is x* repeated, and so on).
  Status parse_repetitions(Elem item, Sequence& seq) {
    while (is_repetition(peek())) {
      uint32_t min = 0, max = 0;
      bool unbounded = false;
      const char op = peek();
      ++pos_;
      if (op == '*') {
        unbounded = true;
      } else if (op == '+') {
        min = 1;
        unbounded = true;
      } else if (op == '?') {
        max = 1;
      } else {
        skip_space(false);
        auto lo = parse_count();
        if (!lo.ok()) return lo.error();
        min = max = *lo;
        skip_space(false);
        if (peek() == ',') {
          ++pos_;
          skip_space(false);
          if (peek() == '}') {
            unbounded = true;
          } else {
            auto hi = parse_count();
            if (!hi.ok()) return hi.error();
            max = *hi;
            if (max < min) return error_at("repetition {" + std::to_string(min) + "," + std::to_string(max) + "}: max below min");
          }
          skip_space(false);
        }
        if (peek() != '}') return error_at("expected '}'");
        ++pos_;
      }
      auto rep = repeat(item, min, max, unbounded);
      if (!rep.ok()) return rep.error();
      item = *rep;
      skip_space(false);
    }
    seq.push_back(item);
    return Status::success();
  }

  Result<uint32_t> parse_count() {
    uint64_t v = 0;
    const size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxRepetition) return error_at("repetition count above " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) return error_at("expected a repetition count");
    return static_cast<uint32_t>(v);
  }

  // A rule matching item{min,max} (max ignored when unbounded), right-recursive.
  Result<Elem> repeat(Elem item, uint32_t min, uint32_t max, bool unbounded) {
    Sequence prefix(min, item);
    Elem tail_ref{};
    bool has_tail = false;
    if (unbounded) {
      const uint32_t star = b_.fresh_rule("star");
      PAGODA_RETURN_IF_ERROR(b_.define(star, {Sequence{item, GrammarBuilder::ref(star)}, Sequence{}}));
      tail_ref = GrammarBuilder::ref(star);
      has_tail = true;
    } else if (max > min) {
      // opt_1 ::= item | ε ; opt_k ::= item opt_{k-1} | ε
      uint32_t prev = b_.fresh_rule("opt");
      PAGODA_RETURN_IF_ERROR(b_.define(prev, {Sequence{item}, Sequence{}}));
      for (uint32_t k = 2; k <= max - min; ++k) {
        const uint32_t r = b_.fresh_rule("opt");
        PAGODA_RETURN_IF_ERROR(b_.define(r, {Sequence{item, GrammarBuilder::ref(prev)}, Sequence{}}));
        prev = r;
      }
      tail_ref = GrammarBuilder::ref(prev);
      has_tail = true;
    }
    if (has_tail) prefix.push_back(tail_ref);
    if (prefix.size() == 1) return prefix[0];
    const uint32_t r = b_.fresh_rule("repeat");
    PAGODA_RETURN_IF_ERROR(b_.define(r, {std::move(prefix)}));
    return GrammarBuilder::ref(r);
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // One character of a literal or class: an escape or a UTF-8 encoded code point.
  Result<uint32_t> parse_char() {
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      if (at_end()) return error_at("unfinished escape");
      ++pos_;
      switch (e) {
        case 'n': return uint32_t{'\n'};
        case 'r': return uint32_t{'\r'};
        case 't': return uint32_t{'\t'};
        case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': case '/': case '.':
          return static_cast<uint32_t>(e);
        case 'x': case 'u': case 'U': {
          const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t v = 0;
          for (int i = 0; i < digits; ++i) {
            const int h = hex_value(peek());
            if (h < 0) return error_at(std::string("\\") + e + " needs " + std::to_string(digits) + " hex digits");
            v = v * 16 + static_cast<uint32_t>(h);
            ++pos_;
          }
          if (v > kMaxCodePoint) return error_at("code point above U+10FFFF");
          return v;
        }
        default: return error_at(std::string("unknown escape '\\") + e + "'");
      }
    }
    // UTF-8: the lead byte says the length; a malformed sequence is an error, not a guess.
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || pos_ + static_cast<size_t>(len) > s_.size()) return error_at("invalid UTF-8");
    uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) {
      const unsigned char cc = static_cast<unsigned char>(s_[pos_ + static_cast<size_t>(i)]);
      if ((cc & 0xC0) != 0x80) return error_at("invalid UTF-8");
      v = (v << 6) | (cc & 0x3F);
    }
    pos_ += static_cast<size_t>(len);
    return v;
  }

  Result<CharClass> parse_class() {
    ++pos_;  // '['
    CharClass cls;
    if (peek() == '^') {
      cls.negated = true;
      ++pos_;
    }
    while (peek() != ']') {
      if (at_end()) return error_at("unterminated character class");
      auto lo = parse_char();
      if (!lo.ok()) return lo.error();
      uint32_t hi = *lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < s_.size()) {
        ++pos_;
        auto h = parse_char();
        if (!h.ok()) return h.error();
        hi = *h;
        if (hi < *lo) return error_at("character range with its end before its start");
      }
      cls.ranges.push_back({*lo, hi});
    }
    ++pos_;
    return cls;
  }

  std::string_view s_;
  size_t pos_ = 0;
  GrammarBuilder b_;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, std::string_view root, GrammarLimits limits) {
  if (text.size() > kMaxGbnfBytes)
    return make_error("grammar: larger than " + std::to_string(kMaxGbnfBytes) + " bytes");
  return GbnfParser(text, limits).parse(root);
}

}  // namespace pagoda::grammar
