#include "jinja/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <vector>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/lexer.h"

namespace pagoda::jinja {

namespace {

using ast::ExprPtr;
using TT = Token::Type;

[[noreturn]] void fail(const std::string& message, int line) {
  throw JinjaError("TemplateSyntaxError", message + " (line " + std::to_string(line) + ")");
}

std::string describe(const Token& t) {
  switch (t.type) {
    case TT::kData: return "template data";
    case TT::kVariableBegin: return "begin of print statement";
    case TT::kVariableEnd: return "end of print statement";
    case TT::kBlockBegin: return "begin of statement block";
    case TT::kBlockEnd: return "end of statement block";
    case TT::kEof: return "end of template";
    default: return t.value;
  }
}

template <typename... E>
int height(const E&... children) {
  int h = 0;
  ((h = std::max(h, children ? children->depth : 0)), ...);
  return h + 1;
}

// Calls fn on every expression in the tree below s (statements' expressions and their subexpressions).
template <typename Fn>
void walk(const ast::Expr& e, Fn&& fn);

template <typename Fn>
void walk_args(const ast::Arguments& a, Fn&& fn) {
  for (const auto& x : a.positional) walk(*x, fn);
  for (const auto& [k, x] : a.keyword) walk(*x, fn);
  if (a.star_args) walk(*a.star_args, fn);
  if (a.star_kwargs) walk(*a.star_kwargs, fn);
}

template <typename Fn>
void walk(const ast::Expr& e, Fn&& fn) {
  using K = ast::Expr::Kind;
  fn(e);
  auto sub = [&](const ExprPtr& x) {
    if (x) walk(*x, fn);
  };
  switch (e.kind) {
    case K::kLiteral:
    case K::kName: break;
    case K::kList:
      for (const auto& x : static_cast<const ast::ListExpr&>(e).items) sub(x);
      break;
    case K::kDict:
      for (const auto& [k, v] : static_cast<const ast::DictExpr&>(e).items) sub(k), sub(v);
      break;
    case K::kGetAttr: sub(static_cast<const ast::GetAttr&>(e).object); break;
    case K::kGetItem: {
      const auto& g = static_cast<const ast::GetItem&>(e);
      sub(g.object), sub(g.key);
      break;
    }
    case K::kSlice: {
      const auto& sl = static_cast<const ast::Slice&>(e);
      sub(sl.start), sub(sl.stop), sub(sl.step);
      break;
    }
    case K::kCall: {
      const auto& c = static_cast<const ast::Call&>(e);
      sub(c.callee);
      walk_args(c.args, fn);
      break;
    }
    case K::kFilter: {
      const auto& f = static_cast<const ast::Filter&>(e);
      sub(f.subject);
      walk_args(f.args, fn);
      break;
    }
    case K::kTest: {
      const auto& t = static_cast<const ast::Test&>(e);
      sub(t.subject);
      walk_args(t.args, fn);
      break;
    }
    case K::kUnary: sub(static_cast<const ast::Unary&>(e).operand); break;
    case K::kBinary: {
      const auto& b = static_cast<const ast::Binary&>(e);
      sub(b.left), sub(b.right);
      break;
    }
    case K::kConcat:
      for (const auto& x : static_cast<const ast::Concat&>(e).parts) sub(x);
      break;
    case K::kCompare: {
      const auto& c = static_cast<const ast::Compare&>(e);
      sub(c.first);
      for (const auto& [op, x] : c.rest) sub(x);
      break;
    }
    case K::kCondExpr: {
      const auto& c = static_cast<const ast::CondExpr&>(e);
      sub(c.test), sub(c.then_expr), sub(c.else_expr);
      break;
    }
  }
}

template <typename Fn>
void walk(const ast::Stmt& s, Fn&& fn) {
  using K = ast::Stmt::Kind;
  auto sub = [&](const ExprPtr& x) {
    if (x) walk(*x, fn);
  };
  auto body = [&](const ast::Body& b) {
    for (const auto& x : b) walk(*x, fn);
  };
  switch (s.kind) {
    case K::kOutput:
    case K::kBreak:
    case K::kContinue: break;
    case K::kPrint: sub(static_cast<const ast::Print&>(s).expr); break;
    case K::kIf: {
      const auto& i = static_cast<const ast::If&>(s);
      for (const auto& [test, b] : i.branches) sub(test), body(b);
      body(i.else_body);
      break;
    }
    case K::kFor: {
      const auto& f = static_cast<const ast::For&>(s);
      sub(f.iterable), sub(f.filter), body(f.body), body(f.else_body);
      break;
    }
    case K::kSet: sub(static_cast<const ast::Set&>(s).value); break;
    case K::kSetBlock: {
      const auto& b = static_cast<const ast::SetBlock&>(s);
      sub(b.filter), body(b.body);
      break;
    }
    case K::kMacro: {
      const auto& m = *static_cast<const ast::Macro&>(s).def;
      for (const auto& d : m.defaults) sub(d);
      body(m.body);
      break;
    }
    case K::kCallBlock: {
      const auto& c = static_cast<const ast::CallBlock&>(s);
      sub(c.call);
      for (const auto& d : c.caller->defaults) sub(d);
      body(c.caller->body);
      break;
    }
    case K::kFilterBlock: {
      const auto& f = static_cast<const ast::FilterBlock&>(s);
      sub(f.filter), body(f.body);
      break;
    }
    case K::kWith: {
      const auto& w = static_cast<const ast::With&>(s);
      for (const auto& [t, v] : w.assignments) sub(v);
      body(w.body);
      break;
    }
    case K::kScope: body(static_cast<const ast::Scope&>(s).body); break;
  }
}

// jinja2 refuses to compile a template that uses an unknown filter or test, except inside an `if` statement or an
// `x if c else y` expression, where the error waits until the filter runs (jinja2 3.0's "soft frames"; for, macro
// and other bodies nested in the if are strict again). Marks unknown ones and fails for the strict ones.
class UnknownNameCheck {
 public:
  void body(ast::Body& b, bool soft) {
    for (auto& s : b) stmt(*s, soft);
  }

 private:
  void args(ast::Arguments& a, bool soft) {
    for (auto& x : a.positional) expr(x, soft);
    for (auto& [k, x] : a.keyword) expr(x, soft);
    expr(a.star_args, soft);
    expr(a.star_kwargs, soft);
  }

  void expr(ExprPtr& p, bool soft) {
    if (!p) return;
    using K = ast::Expr::Kind;
    ast::Expr& e = *p;
    switch (e.kind) {
      case K::kFilter: {
        auto& f = static_cast<ast::Filter&>(e);
        f.known = find_filter(f.name) != nullptr;
        if (!f.known && !soft) throw JinjaError("TemplateAssertionError", "No filter named '" + f.name + "'.");
        expr(f.subject, soft);
        args(f.args, soft);
        return;
      }
      case K::kTest: {
        auto& t = static_cast<ast::Test&>(e);
        t.known = find_test(t.name) != nullptr;
        if (!t.known && !soft) throw JinjaError("TemplateAssertionError", "No test named '" + t.name + "'.");
        expr(t.subject, soft);
        args(t.args, soft);
        return;
      }
      case K::kCondExpr: {
        auto& c = static_cast<ast::CondExpr&>(e);
        expr(c.test, true), expr(c.then_expr, true), expr(c.else_expr, true);
        return;
      }
      case K::kLiteral:
      case K::kName: return;
      case K::kList:
        for (auto& x : static_cast<ast::ListExpr&>(e).items) expr(x, soft);
        return;
      case K::kDict:
        for (auto& [k, v] : static_cast<ast::DictExpr&>(e).items) expr(k, soft), expr(v, soft);
        return;
      case K::kGetAttr: expr(static_cast<ast::GetAttr&>(e).object, soft); return;
      case K::kGetItem: {
        auto& g = static_cast<ast::GetItem&>(e);
        expr(g.object, soft), expr(g.key, soft);
        return;
      }
      case K::kSlice: {
        auto& sl = static_cast<ast::Slice&>(e);
        expr(sl.start, soft), expr(sl.stop, soft), expr(sl.step, soft);
        return;
      }
      case K::kCall: {
        auto& c = static_cast<ast::Call&>(e);
        expr(c.callee, soft);
        args(c.args, soft);
        return;
      }
      case K::kUnary: expr(static_cast<ast::Unary&>(e).operand, soft); return;
      case K::kBinary: {
        auto& b = static_cast<ast::Binary&>(e);
        expr(b.left, soft), expr(b.right, soft);
        return;
      }
      case K::kConcat:
        for (auto& x : static_cast<ast::Concat&>(e).parts) expr(x, soft);
        return;
      case K::kCompare: {
        auto& c = static_cast<ast::Compare&>(e);
        expr(c.first, soft);
        for (auto& [op, x] : c.rest) expr(x, soft);
        return;
      }
    }
  }

  void stmt(ast::Stmt& s, bool soft) {
    using K = ast::Stmt::Kind;
    switch (s.kind) {
      case K::kOutput:
      case K::kBreak:
      case K::kContinue: return;
      case K::kPrint: expr(static_cast<ast::Print&>(s).expr, soft); return;
      case K::kIf: {
        auto& i = static_cast<ast::If&>(s);
        for (auto& [test, b] : i.branches) expr(test, true), body(b, true);
        body(i.else_body, true);
        return;
      }
      case K::kFor: {
        auto& f = static_cast<ast::For&>(s);
        expr(f.iterable, soft);
        expr(f.filter, false);
        body(f.body, false);
        body(f.else_body, false);
        return;
      }
      case K::kSet: expr(static_cast<ast::Set&>(s).value, soft); return;
      case K::kSetBlock: {
        auto& b = static_cast<ast::SetBlock&>(s);
        expr(b.filter, soft);
        body(b.body, false);
        return;
      }
      case K::kMacro: {
        auto& m = *static_cast<ast::Macro&>(s).def;
        for (auto& d : m.defaults) expr(d, soft);
        body(m.body, false);
        return;
      }
      case K::kCallBlock: {
        auto& c = static_cast<ast::CallBlock&>(s);
        expr(c.call, soft);
        for (auto& d : c.caller->defaults) expr(d, soft);
        body(c.caller->body, false);
        return;
      }
      case K::kFilterBlock: {
        auto& f = static_cast<ast::FilterBlock&>(s);
        expr(f.filter, false);
        body(f.body, false);
        return;
      }
      case K::kWith: {
        auto& w = static_cast<ast::With&>(s);
        for (auto& [t, v] : w.assignments) expr(v, soft);
        body(w.body, false);
        return;
      }
      case K::kScope: body(static_cast<ast::Scope&>(s).body, false); return;
    }
  }
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParseLimits& limits) : tokens_(std::move(tokens)), limits_(limits) {}

  ast::Template run() {
    ast::Template t;
    t.body = subparse({});
    return t;
  }

 private:
  // Bounds recursion: each nested expression or statement holds one of these while it is parsed.
  class Nest {
   public:
    Nest(Parser& p, int weight) : p_(p), weight_(weight) {
      p_.nesting_ += weight;
      if (p_.nesting_ > p_.limits_.max_nesting * 8) fail("template nesting too deep", p_.cur().line);
    }
    ~Nest() { p_.nesting_ -= weight_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
    int weight_;
  };

  const Token& cur() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(std::string_view op) const { return cur().type == TT::kOperator && cur().value == op; }
  bool is_name(std::string_view name) const { return cur().type == TT::kName && cur().value == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) fail("expected token '" + std::string(op) + "', got '" + describe(cur()) + "'", cur().line);
    next();
  }
  void expect_name(std::string_view name) {
    if (!is_name(name)) fail("expected token '" + std::string(name) + "', got '" + describe(cur()) + "'", cur().line);
    next();
  }
  std::string expect_any_name() {
    if (cur().type != TT::kName) fail("expected token 'name', got '" + describe(cur()) + "'", cur().line);
    return next().value;
  }
  void expect(TT type) {
    if (cur().type != type) {
      Token want;
      want.type = type;
      fail("expected token '" + describe(want) + "', got '" + describe(cur()) + "'", cur().line);
    }
    next();
  }

  ExprPtr checked(ExprPtr e) {
    if (e->depth > limits_.max_nesting * 4) fail("expression nested too deeply", e->line);
    return e;
  }

  // ---- statements ----

  ast::Body subparse(std::initializer_list<std::string_view> end_names) {
    Nest nest(*this, 8);
    ast::Body body;
    std::string pending_text;
    int pending_line = 0;
    auto flush = [&] {
      if (!pending_text.empty()) body.push_back(std::make_unique<ast::Output>(pending_line, std::move(pending_text)));
      pending_text.clear();
    };
    while (cur().type != TT::kEof) {
      const Token& t = cur();
      if (t.type == TT::kData) {
        if (pending_text.empty()) pending_line = t.line;
        pending_text += t.value;
        next();
      } else if (t.type == TT::kVariableBegin) {
        flush();
        const int line = next().line;
        ExprPtr e = parse_tuple(true, false, {}, false);
        expect(TT::kVariableEnd);
        body.push_back(std::make_unique<ast::Print>(line, std::move(e)));
      } else if (t.type == TT::kBlockBegin) {
        flush();
        next();
        for (std::string_view end : end_names)
          if (is_name(end)) return body;
        parse_statement(body);
        expect(TT::kBlockEnd);
      } else {
        fail("unexpected '" + describe(t) + "'", t.line);
      }
    }
    flush();
    if (end_names.size() > 0) {
      std::string wanted;
      for (std::string_view end : end_names) wanted += (wanted.empty() ? "'" : " or '") + std::string(end) + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + wanted + ".", cur().line);
    }
    return body;
  }

  ast::Body parse_statements(std::initializer_list<std::string_view> end_names, bool drop_needle) {
    skip_op(":");
    expect(TT::kBlockEnd);
    ast::Body body = subparse(end_names);
    if (drop_needle) next();
    return body;
  }

  void parse_statement(ast::Body& out) {
    const Token& t = cur();
    if (t.type != TT::kName) fail("tag name expected", t.line);
    const std::string& tag = t.value;
    if (tag == "print") return parse_print(out);
    out.push_back(parse_other_statement());
  }

  ast::StmtPtr parse_other_statement() {
    const Token& t = cur();
    const std::string& tag = t.value;
    if (tag == "for") return parse_for();
    if (tag == "if") return parse_if();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "generation") return parse_generation();
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside loop", t.line);
      const int line = t.line;
      const bool is_break = tag == "break";
      next();
      return std::make_unique<ast::LoopControl>(line, is_break);
    }
    if (tag == "extends" || tag == "block" || tag == "include" || tag == "import" || tag == "from" ||
        tag == "autoescape" || tag == "do" || tag == "trans")
      fail("the '" + tag + "' tag is not supported", t.line);
    fail("Encountered unknown tag '" + tag + "'.", t.line);
  }

  // Converts a parsed expression to an assignment target: names, or tuples of them.
  ast::Target to_target(const ast::Expr& e) {
    ast::Target t;
    if (e.kind == ast::Expr::Kind::kName) {
      t.kind = ast::Target::Kind::kName;
      t.name = static_cast<const ast::Name&>(e).name;
      return t;
    }
    if (e.kind == ast::Expr::Kind::kList && static_cast<const ast::ListExpr&>(e).is_tuple) {
      t.kind = ast::Target::Kind::kTuple;
      for (const auto& item : static_cast<const ast::ListExpr&>(e).items) t.items.push_back(to_target(*item));
      return t;
    }
    fail("can't assign to this expression", e.line);
  }

  ast::Target parse_assign_target(bool with_namespace, std::initializer_list<std::string_view> extra_end) {
    if (with_namespace && look().type == TT::kOperator && look().value == ".") {
      ast::Target t;
      t.kind = ast::Target::Kind::kNamespaceAttr;
      t.name = expect_any_name();
      next();  // .
      t.attr = expect_any_name();
      return t;
    }
    ExprPtr e = parse_tuple(false, true, extra_end, false);
    return to_target(*e);
  }

  ast::StmtPtr parse_for() {
    auto node = std::make_unique<ast::For>(next().line);
    node->target = parse_assign_target(false, {"in"});
    expect_name("in");
    node->iterable = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) node->filter = parse_expression(true);
    node->recursive = skip_name("recursive");
    ++loop_depth_;
    node->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().value == "else") {
      const int saved = loop_depth_;
      loop_depth_ = 0;  // jinja2 emits the else body after the Python loop
      node->else_body = parse_statements({"endfor"}, true);
      loop_depth_ = saved;
    }
    return node;
  }

  ast::StmtPtr parse_if() {
    auto node = std::make_unique<ast::If>(next().line);
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false);
      ast::Body body = parse_statements({"elif", "else", "endif"}, false);
      node->branches.emplace_back(std::move(test), std::move(body));
      const Token& t = next();
      if (t.value == "elif") continue;
      if (t.value == "else") node->else_body = parse_statements({"endif"}, true);
      break;
    }
    return node;
  }

  ast::StmtPtr parse_set() {
    const int line = next().line;
    ast::Target target = parse_assign_target(true, {});
    if (skip_op("=")) return std::make_unique<ast::Set>(line, std::move(target), parse_tuple(true, false, {}, false));
    auto node = std::make_unique<ast::SetBlock>(line);
    node->target = std::move(target);
    if (is_op("|")) node->filter = parse_filter(nullptr, false);
    node->body = parse_statements({"endset"}, true);
    return node;
  }

  void parse_signature(ast::MacroDef& def) {
    expect_op("(");
    while (!is_op(")")) {
      if (!def.params.empty()) expect_op(",");
      def.params.push_back(expect_any_name());
      if (skip_op("=")) {
        def.defaults.push_back(parse_expression(true));
      } else if (!def.defaults.empty()) {
        fail("non-default argument follows default argument", cur().line);
      }
    }
    expect_op(")");
  }

  // A macro or call-block body is a Python function in jinja2's output: break/continue cannot reach an outer loop.
  ast::Body parse_function_body(std::initializer_list<std::string_view> end_names) {
    const int saved = loop_depth_;
    loop_depth_ = 0;
    ast::Body body = parse_statements(end_names, true);
    loop_depth_ = saved;
    return body;
  }

  ast::StmtPtr parse_macro() {
    auto node = std::make_unique<ast::Macro>(next().line);
    node->def->name = expect_any_name();
    parse_signature(*node->def);
    node->def->body = parse_function_body({"endmacro"});
    note_special_names(*node->def);
    return node;
  }

  ast::StmtPtr parse_call_block() {
    auto node = std::make_unique<ast::CallBlock>(next().line);
    node->caller->name = "caller";
    if (is_op("(")) parse_signature(*node->caller);
    ExprPtr call = parse_expression(true);
    if (call->kind != ast::Expr::Kind::kCall) fail("expected call", node->line);
    node->call = std::move(call);
    node->caller->body = parse_function_body({"endcall"});
    note_special_names(*node->caller);
    return node;
  }

  ast::StmtPtr parse_filter_block() {
    auto node = std::make_unique<ast::FilterBlock>(next().line);
    node->filter = parse_filter(nullptr, true);
    node->body = parse_statements({"endfilter"}, true);
    return node;
  }

  ast::StmtPtr parse_with() {
    auto node = std::make_unique<ast::With>(next().line);
    while (cur().type != TT::kBlockEnd) {
      if (!node->assignments.empty()) expect_op(",");
      ast::Target target = parse_assign_target(false, {});
      expect_op("=");
      node->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    node->body = parse_statements({"endwith"}, true);
    return node;
  }

  // {% print a, b %} writes each expression in turn.
  void parse_print(ast::Body& out) {
    const int line = next().line;
    bool first = true;
    while (cur().type != TT::kBlockEnd) {
      if (!first) expect_op(",");
      first = false;
      out.push_back(std::make_unique<ast::Print>(line, parse_expression(true)));
    }
  }

  ast::StmtPtr parse_generation() {
    auto node = std::make_unique<ast::Scope>(next().line);
    node->body = parse_function_body({"endgeneration"});
    return node;
  }

  // ---- expressions ----

  ExprPtr parse_expression(bool with_condexpr) {
    Nest nest(*this, 1);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    Nest nest(*this, 1);
    const int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      ExprPtr expr2 = parse_or();
      ExprPtr expr3;
      if (skip_name("else")) expr3 = parse_condexpr();
      const int h = height(expr1, expr2, expr3);
      expr1 = std::make_unique<ast::CondExpr>(line, std::move(expr2), std::move(expr1), std::move(expr3));
      expr1->depth = h;
      expr1 = checked(std::move(expr1));
    }
    return expr1;
  }

  ExprPtr binary(ast::BinaryOp op, ExprPtr a, ExprPtr b) {
    const int line = a->line;
    const int h = height(a, b);
    ExprPtr e = std::make_unique<ast::Binary>(line, op, std::move(a), std::move(b));
    e->depth = h;
    return checked(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (skip_name("or")) left = binary(ast::BinaryOp::kOr, std::move(left), parse_and());
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (skip_name("and")) left = binary(ast::BinaryOp::kAnd, std::move(left), parse_not());
    return left;
  }

  ExprPtr parse_not() {
    Nest nest(*this, 1);
    if (is_name("not")) {
      const int line = next().line;
      ExprPtr operand = parse_not();
      const int h = height(operand);
      ExprPtr e = std::make_unique<ast::Unary>(line, ast::UnaryOp::kNot, std::move(operand));
      e->depth = h;
      return checked(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr expr = parse_math1();
    std::unique_ptr<ast::Compare> cmp;
    while (true) {
      ast::CompareOp op;
      if (cur().type == TT::kOperator && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                          cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        const std::string& v = cur().value;
        op = v == "==" ? ast::CompareOp::kEq
             : v == "!=" ? ast::CompareOp::kNe
             : v == "<"  ? ast::CompareOp::kLt
             : v == "<=" ? ast::CompareOp::kLe
             : v == ">"  ? ast::CompareOp::kGt
                         : ast::CompareOp::kGe;
        next();
      } else if (skip_name("in")) {
        op = ast::CompareOp::kIn;
      } else if (is_name("not") && look().type == TT::kName && look().value == "in") {
        next();
        next();
        op = ast::CompareOp::kNotIn;
      } else {
        break;
      }
      if (!cmp) {
        cmp = std::make_unique<ast::Compare>(line, std::move(expr));
        cmp->depth = height(cmp->first);
      }
      ExprPtr operand = parse_math1();
      cmp->depth = std::max(cmp->depth, operand->depth + 1);
      cmp->rest.emplace_back(op, std::move(operand));
    }
    if (!cmp) return expr;
    return checked(std::move(cmp));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (cur().type == TT::kOperator && (cur().value == "+" || cur().value == "-")) {
      const ast::BinaryOp op = next().value == "+" ? ast::BinaryOp::kAdd : ast::BinaryOp::kSub;
      left = binary(op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto concat = std::make_unique<ast::Concat>(line);
    concat->depth = first->depth + 1;
    concat->parts.push_back(std::move(first));
    while (skip_op("~")) {
      concat->parts.push_back(parse_math2());
      concat->depth = std::max(concat->depth, concat->parts.back()->depth + 1);
    }
    return checked(std::move(concat));
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (cur().type == TT::kOperator &&
           (cur().value == "*" || cur().value == "/" || cur().value == "//" || cur().value == "%")) {
      const std::string v = next().value;
      const ast::BinaryOp op = v == "*"   ? ast::BinaryOp::kMul
                               : v == "/" ? ast::BinaryOp::kDiv
                               : v == "//" ? ast::BinaryOp::kFloorDiv
                                           : ast::BinaryOp::kMod;
      left = binary(op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) left = binary(ast::BinaryOp::kPow, std::move(left), parse_unary(true));
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Nest nest(*this, 1);
    const int line = cur().line;
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const ast::UnaryOp op = next().value == "-" ? ast::UnaryOp::kNeg : ast::UnaryOp::kPos;
      ExprPtr operand = parse_unary(false);
      const int h = height(operand);
      node = std::make_unique<ast::Unary>(line, op, std::move(operand));
      node->depth = h;
      node = checked(std::move(node));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    Nest nest(*this, 1);
    const Token& t = cur();
    switch (t.type) {
      case TT::kName: {
        next();
        if (t.value == "true" || t.value == "True") return std::make_unique<ast::Literal>(t.line, Value(true));
        if (t.value == "false" || t.value == "False") return std::make_unique<ast::Literal>(t.line, Value(false));
        if (t.value == "none" || t.value == "None") return std::make_unique<ast::Literal>(t.line, Value::none());
        return std::make_unique<ast::Name>(t.line, t.value);
      }
      case TT::kString: {
        const int line = t.line;
        std::string s = next().value;
        while (cur().type == TT::kString) s += next().value;  // adjacent literals concatenate
        return std::make_unique<ast::Literal>(line, Value(std::move(s)));
      }
      case TT::kInteger: next(); return std::make_unique<ast::Literal>(t.line, Value(t.int_value));
      case TT::kFloat: next(); return std::make_unique<ast::Literal>(t.line, Value(t.float_value));
      case TT::kOperator:
        if (t.value == "(") {
          next();
          ExprPtr e = parse_tuple(true, false, {}, true);
          expect_op(")");
          return e;
        }
        if (t.value == "[") return parse_list();
        if (t.value == "{") return parse_dict();
        break;
      default: break;
    }
    fail("unexpected '" + describe(t) + "'", t.line);
  }

  // jinja2's parse_tuple. simplified: items are primaries (assignment targets).
  ExprPtr parse_tuple(bool with_condexpr, bool simplified, std::initializer_list<std::string_view> extra_end,
                      bool explicit_parentheses) {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) fail("Expected an expression, got '" + describe(cur()) + "'", cur().line);
    }
    auto tuple = std::make_unique<ast::ListExpr>(line, true);
    for (auto& a : args) tuple->depth = std::max(tuple->depth, a->depth + 1);
    tuple->items = std::move(args);
    return checked(std::move(tuple));
  }

  bool is_tuple_end(std::initializer_list<std::string_view> extra_end) const {
    if (cur().type == TT::kVariableEnd || cur().type == TT::kBlockEnd || is_op(")")) return true;
    for (std::string_view name : extra_end)
      if (is_name(name)) return true;
    return false;
  }

  ExprPtr parse_list() {
    auto list = std::make_unique<ast::ListExpr>(next().line, false);
    while (!is_op("]")) {
      if (!list->items.empty()) expect_op(",");
      if (is_op("]")) break;
      list->items.push_back(parse_expression(true));
      list->depth = std::max(list->depth, list->items.back()->depth + 1);
    }
    expect_op("]");
    return checked(std::move(list));
  }

  ExprPtr parse_dict() {
    auto dict = std::make_unique<ast::DictExpr>(next().line);
    while (!is_op("}")) {
      if (!dict->items.empty()) expect_op(",");
      if (is_op("}")) break;
      ExprPtr key = parse_expression(true);
      expect_op(":");
      ExprPtr value = parse_expression(true);
      dict->depth = std::max({dict->depth, key->depth + 1, value->depth + 1});
      dict->items.emplace_back(std::move(key), std::move(value));
    }
    expect_op("}");
    return checked(std::move(dict));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& t = next();
    if (t.value == ".") {
      const Token& attr = next();
      if (attr.type == TT::kName) {
        const int h = height(node);
        ExprPtr e = std::make_unique<ast::GetAttr>(t.line, std::move(node), attr.value);
        e->depth = h;
        return checked(std::move(e));
      }
      if (attr.type != TT::kInteger) fail("expected name or number", attr.line);
      const int h = height(node);
      ExprPtr e = std::make_unique<ast::GetItem>(t.line, std::move(node),
                                                 std::make_unique<ast::Literal>(attr.line, Value(attr.int_value)));
      e->depth = h + 1;
      return checked(std::move(e));
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr key;
    if (args.size() == 1) {
      key = std::move(args[0]);
    } else {
      auto tuple = std::make_unique<ast::ListExpr>(t.line, true);
      for (auto& a : args) tuple->depth = std::max(tuple->depth, a->depth + 1);
      tuple->items = std::move(args);
      key = std::move(tuple);
    }
    const int h = height(node, key);
    ExprPtr e = std::make_unique<ast::GetItem>(t.line, std::move(node), std::move(key));
    e->depth = h;
    return checked(std::move(e));
  }

  ExprPtr parse_subscribed() {
    auto slice = std::make_unique<ast::Slice>(cur().line);
    if (is_op(":")) {
      next();
    } else {
      ExprPtr e = parse_expression(true);
      if (!is_op(":")) return e;
      next();
      slice->start = std::move(e);
    }
    if (!is_op(":") && !is_op("]") && !is_op(",")) slice->stop = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) slice->step = parse_expression(true);
    }
    slice->depth = height(slice->start, slice->stop, slice->step);
    return slice;
  }

  void parse_call_args(ast::Arguments& args, int& depth) {
    const int line = cur().line;
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", line);
    };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      ExprPtr value;
      if (is_op("*")) {
        ensure(!args.star_args && !args.star_kwargs);
        next();
        args.star_args = parse_expression(true);
        depth = std::max(depth, args.star_args->depth + 1);
      } else if (is_op("**")) {
        ensure(!args.star_kwargs);
        next();
        args.star_kwargs = parse_expression(true);
        depth = std::max(depth, args.star_kwargs->depth + 1);
      } else if (cur().type == TT::kName && look().type == TT::kOperator && look().value == "=") {
        ensure(!args.star_kwargs);
        std::string key = next().value;
        next();
        ExprPtr v = parse_expression(true);
        depth = std::max(depth, v->depth + 1);
        args.keyword.emplace_back(std::move(key), std::move(v));
      } else {
        ensure(!args.star_args && !args.star_kwargs && args.keyword.empty());
        ExprPtr v = parse_expression(true);
        depth = std::max(depth, v->depth + 1);
        args.positional.push_back(std::move(v));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto call = std::make_unique<ast::Call>(cur().line, nullptr);
    call->depth = node->depth + 1;
    call->callee = std::move(node);
    parse_call_args(call->args, call->depth);
    return checked(std::move(call));
  }

  std::string parse_dotted_name() {
    std::string name = expect_any_name();
    while (is_op(".")) {
      next();
      name += "." + expect_any_name();
    }
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      const int line = cur().line;
      std::string name = parse_dotted_name();
      auto filter = std::make_unique<ast::Filter>(line, nullptr, name);
      filter->depth = height(node);
      filter->subject = std::move(node);
      if (is_op("(")) parse_call_args(filter->args, filter->depth);
      node = checked(std::move(filter));
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = next().line;  // is
    const bool negated = skip_name("not");
    std::string name = parse_dotted_name();
    auto test = std::make_unique<ast::Test>(line, nullptr, name);
    test->depth = height(node);
    test->subject = std::move(node);
    const Token& t = cur();
    if (is_op("(")) {
      parse_call_args(test->args, test->depth);
    } else if ((t.type == TT::kName || t.type == TT::kString || t.type == TT::kInteger || t.type == TT::kFloat ||
                is_op("(") || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is", t.line);
      ExprPtr arg = parse_postfix(parse_primary());
      test->depth = std::max(test->depth, arg->depth + 1);
      test->args.positional.push_back(std::move(arg));
    }
    ExprPtr e = checked(std::move(test));
    if (negated) {
      const int h = height(e);
      e = std::make_unique<ast::Unary>(line, ast::UnaryOp::kNot, std::move(e));
      e->depth = h;
    }
    return e;
  }

  // Records whether a macro body mentions caller, varargs or kwargs (jinja2 only accepts them then).
  void note_special_names(ast::MacroDef& def) {
    std::unordered_set<std::string> names;
    for (const auto& s : def.body) {
      walk(*s, [&](const ast::Expr& e) {
        if (e.kind == ast::Expr::Kind::kName) names.insert(static_cast<const ast::Name&>(e).name);
      });
    }
    def.uses_caller = names.count("caller") > 0;
    def.uses_varargs = names.count("varargs") > 0;
    def.uses_kwargs = names.count("kwargs") > 0;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  ParseLimits limits_;
  int nesting_ = 0;
  int loop_depth_ = 0;  // enclosing for bodies in the current function (break/continue need one)
};

}  // namespace

ast::Template parse(std::string_view source, const ParseLimits& limits) {
  ast::Template t = Parser(tokenize(source), limits).run();
  UnknownNameCheck().body(t.body, false);
  return t;
}

}  // namespace pagoda::jinja
