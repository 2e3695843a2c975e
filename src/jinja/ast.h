// The syntax tree the parser builds and the renderer walks. Node shapes follow jinja2's (jinja2/nodes.py), so the
// renderer can follow jinja2's code generator case by case.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace pagoda::jinja::ast {

struct Expr {
  enum class Kind {
    kLiteral,
    kName,
    kList,  // list or tuple display
    kDict,
    kGetAttr,
    kGetItem,
    kSlice,  // only as the key of a kGetItem
    kCall,
    kFilter,
    kTest,
    kUnary,
    kBinary,
    kConcat,
    kCompare,
    kCondExpr,
  };
  Expr(Kind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  Kind kind;
  int line;
  int depth = 1;  // height of this subtree; the parser bounds it, which bounds the renderer's recursion
};
using ExprPtr = std::unique_ptr<Expr>;

struct Literal : Expr {
  Literal(int l, Value v) : Expr(Kind::kLiteral, l), value(std::move(v)) {}
  Value value;
};

struct Name : Expr {
  Name(int l, std::string n) : Expr(Kind::kName, l), name(std::move(n)) {}
  std::string name;
};

struct ListExpr : Expr {
  ListExpr(int l, bool t) : Expr(Kind::kList, l), is_tuple(t) {}
  std::vector<ExprPtr> items;
  bool is_tuple;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(Kind::kDict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetAttr : Expr {
  GetAttr(int l, ExprPtr o, std::string n) : Expr(Kind::kGetAttr, l), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};

struct GetItem : Expr {
  GetItem(int l, ExprPtr o, ExprPtr k) : Expr(Kind::kGetItem, l), object(std::move(o)), key(std::move(k)) {}
  ExprPtr object;
  ExprPtr key;  // may be a Slice
};

struct Slice : Expr {
  explicit Slice(int l) : Expr(Kind::kSlice, l) {}
  ExprPtr start, stop, step;  // each may be null
};

// Arguments of a call, filter or test: f(a, b, k=v, *args, **kwargs).
struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;
  ExprPtr star_kwargs;
};

struct Call : Expr {
  Call(int l, ExprPtr c) : Expr(Kind::kCall, l), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};

// subject | name(args). `subject` is null for the filter of a {% filter %} block or a {% set x | f %} block, where
// the block's output is the subject.
struct Filter : Expr {
  Filter(int l, ExprPtr s, std::string n) : Expr(Kind::kFilter, l), subject(std::move(s)), name(std::move(n)) {}
  ExprPtr subject;
  std::string name;
  Arguments args;
  bool known = true;  // false: no such filter; an error if evaluated (jinja2 allows that only inside an if)
};

// subject is name(args). `not` wraps it in a Unary kNot.
struct Test : Expr {
  Test(int l, ExprPtr s, std::string n) : Expr(Kind::kTest, l), subject(std::move(s)), name(std::move(n)) {}
  ExprPtr subject;
  std::string name;
  Arguments args;
  bool known = true;  // as for Filter
};

enum class UnaryOp { kNot, kNeg, kPos };
struct Unary : Expr {
  Unary(int l, UnaryOp o, ExprPtr e) : Expr(Kind::kUnary, l), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kAnd, kOr };
struct Binary : Expr {
  Binary(int l, BinaryOp o, ExprPtr a, ExprPtr b)
      : Expr(Kind::kBinary, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left, right;
};

// a ~ b ~ c: str() of each, joined.
struct Concat : Expr {
  explicit Concat(int l) : Expr(Kind::kConcat, l) {}
  std::vector<ExprPtr> parts;
};

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };
// a < b < c: Python's chained comparison (each operand evaluated once, stops at the first false).
struct Compare : Expr {
  Compare(int l, ExprPtr f) : Expr(Kind::kCompare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

// then_expr if test else else_expr; without `else` a false test gives Undefined.
struct CondExpr : Expr {
  CondExpr(int l, ExprPtr t, ExprPtr a, ExprPtr b)
      : Expr(Kind::kCondExpr, l), test(std::move(t)), then_expr(std::move(a)), else_expr(std::move(b)) {}
  ExprPtr test, then_expr, else_expr;
};

// Where {% for %} and {% set %} store: a name, a tuple of targets, or (set only) namespace.attribute.
struct Target {
  enum class Kind { kName, kTuple, kNamespaceAttr };
  Kind kind = Kind::kName;
  std::string name;
  std::string attr;             // kNamespaceAttr
  std::vector<Target> items;    // kTuple
};

struct Stmt {
  enum class Kind {
    kOutput,
    kPrint,
    kIf,
    kFor,
    kSet,
    kSetBlock,
    kMacro,
    kCallBlock,
    kFilterBlock,
    kWith,
    kScope,
    kBreak,
    kContinue,
  };
  Stmt(Kind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  Kind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Template text between tags, after whitespace control.
struct Output : Stmt {
  Output(int l, std::string t) : Stmt(Kind::kOutput, l), text(std::move(t)) {}
  std::string text;
};

// {{ expr }} and {% print expr %}.
struct Print : Stmt {
  Print(int l, ExprPtr e) : Stmt(Kind::kPrint, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct If : Stmt {
  explicit If(int l) : Stmt(Kind::kIf, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body else_body;
};

struct For : Stmt {
  explicit For(int l) : Stmt(Kind::kFor, l) {}
  Target target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  bool recursive = false;
  Body body;
  Body else_body;
};

struct Set : Stmt {
  Set(int l, Target t, ExprPtr v) : Stmt(Kind::kSet, l), target(std::move(t)), value(std::move(v)) {}
  Target target;
  ExprPtr value;
};

// {% set x %}...{% endset %}, optionally {% set x | filter %}.
struct SetBlock : Stmt {
  explicit SetBlock(int l) : Stmt(Kind::kSetBlock, l) {}
  Target target;
  ExprPtr filter;  // a Filter chain whose innermost subject is null; may be null
  Body body;
};

// A macro's signature and body; also the body of a {% call %} block (the `caller` macro).
struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  Body body;
  bool uses_caller = false;   // the body mentions `caller`
  bool uses_varargs = false;  // ... `varargs`
  bool uses_kwargs = false;   // ... `kwargs`
};

struct Macro : Stmt {
  explicit Macro(int l) : Stmt(Kind::kMacro, l), def(std::make_shared<MacroDef>()) {}
  std::shared_ptr<MacroDef> def;
};

// {% call(params) f(args) %}body{% endcall %}: calls f with `caller` bound to a macro rendering body.
struct CallBlock : Stmt {
  explicit CallBlock(int l) : Stmt(Kind::kCallBlock, l), caller(std::make_shared<MacroDef>()) {}
  ExprPtr call;  // a Call
  std::shared_ptr<MacroDef> caller;
};

struct FilterBlock : Stmt {
  explicit FilterBlock(int l) : Stmt(Kind::kFilterBlock, l) {}
  ExprPtr filter;  // a Filter chain whose innermost subject is null
  Body body;
};

struct With : Stmt {
  explicit With(int l) : Stmt(Kind::kWith, l) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

// A body rendered in place in its own variable scope: {% generation %} (transformers' AssistantTracker renders its
// body through a caller macro, so assignments inside do not leak out).
struct Scope : Stmt {
  explicit Scope(int l) : Stmt(Kind::kScope, l) {}
  Body body;
};

struct LoopControl : Stmt {
  LoopControl(int l, bool is_break) : Stmt(is_break ? Kind::kBreak : Kind::kContinue, l) {}
};

struct Template {
  Body body;
};

}  // namespace pagoda::jinja::ast
