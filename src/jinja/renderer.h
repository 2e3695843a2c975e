// Renderer: walks a parsed template and writes its output, following the code jinja2's compiler generates for
// each node (jinja2/compiler.py) and the runtime objects it uses (jinja2/runtime.py: LoopContext, Macro).
//
// Variable scopes follow jinja2's: a for-loop iteration, a macro call, a with block and the body of a block
// {% set %} or {% filter %} each get a scope of their own, so {% set %} inside them does not leak out (which is
// why templates use namespace()); if/elif/else share the enclosing scope. Names resolve through the enclosing
// scopes (lexically, for macros), then the render variables, then the globals.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jinja/ast.h"
#include "jinja/objects.h"
#include "jinja/template.h"

namespace pagoda::jinja {

class Scope {
 public:
  explicit Scope(Scope* parent) : parent_(parent) {}
  // The innermost binding of name, or nullptr.
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  Scope* parent_;
  std::unordered_map<std::string, Value> vars_;
};

class Renderer {
 public:
  Renderer(const RenderOptions& options, const Value& context);
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  std::string render(const ast::Template& t);

  // Calls a macro, builtin, bound method, loop() or caller() value.
  Value call(const Value& callee, CallArgs& args);
  Value apply_filter(std::string_view name, const Value& subject, CallArgs& args);
  bool apply_test(std::string_view name, const Value& subject, CallArgs& args);

  const RenderOptions& options() const { return options_; }
  std::tm now() const;
  // Counts work against RenderOptions::max_steps.
  void charge(uint64_t steps);
  // Fails when a string (or list) a template builds exceeds the output bound.
  void check_size(const Value& v);
  std::shared_ptr<Namespace> new_namespace();
  // Objects whose state a template can change (namespaces, loop.changed's memory) can end up holding themselves;
  // the renderer empties them all when it finishes so that such reference cycles are freed.
  void track_mutable(const std::shared_ptr<Object>& object, void (*clear)(Object&));

  // Used by the Macro and LoopContext objects.
  Value invoke_macro(const ast::MacroDef& def, Scope* closure, CallArgs& args);
  Value recurse_loop(const ast::For& node, Scope* scope, const Value& iterable, int depth0);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const ast::Body& body, Scope* scope);
  Flow exec(const ast::Stmt& s, Scope* scope);
  void exec_for(const ast::For& node, Scope* scope, const Value& iterable, int depth0);
  void exec_call_block(const ast::CallBlock& node, Scope* scope);
  Value eval(const ast::Expr& e, Scope* scope);
  Value eval_binary(const ast::Binary& b, Scope* scope);
  Value eval_compare(const ast::Compare& c, Scope* scope);
  CallArgs eval_args(const ast::Arguments& a, Scope* scope);
  // A filter chain from {% filter %} or {% set x | f %}: the innermost filter's subject is `input`.
  Value apply_filter_chain(const ast::Expr& e, Scope* scope, const Value& input);
  void assign(const ast::Target& target, const Value& v, Scope* scope);
  Value lookup(const std::string& name, Scope* scope) const;
  // Renders body in a new scope into a string.
  std::string capture(const ast::Body& body, Scope* scope);
  void emit(std::string_view text);
  Scope* new_scope(Scope* parent);

  RenderOptions options_;
  const Value& context_;
  std::string* out_ = nullptr;
  std::vector<std::unique_ptr<Scope>> scopes_;  // every scope of this render; macros and loops point into them
  std::vector<std::pair<std::weak_ptr<Object>, void (*)(Object&)>> mutables_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace pagoda::jinja
