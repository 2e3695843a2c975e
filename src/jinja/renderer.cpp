#include "jinja/renderer.h"

#include <algorithm>
#include <utility>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

namespace {

// Sets `ref` to `value` for the guard's scope and restores the old value when it ends, exceptions included: the
// output redirections of capture(), macros and recursive loops, and the call-depth count.
template <typename T>
class ScopedValue {
 public:
  ScopedValue(T& ref, T value) : ref_(ref), old_(ref) { ref_ = value; }
  ~ScopedValue() { ref_ = old_; }
  ScopedValue(const ScopedValue&) = delete;
  ScopedValue& operator=(const ScopedValue&) = delete;

 private:
  T& ref_;
  T old_;
};

[[noreturn]] void limit_error(const std::string& message) { throw JinjaError("LimitExceeded", message); }

// A {% macro %} (or the `caller` of a {% call %} block) bound to the scope it was defined in.
class Macro : public Callable {
 public:
  Macro(const ast::MacroDef* def, Scope* closure) : def_(def), closure_(closure) {}
  std::string type_name() const override { return "Macro"; }
  std::string to_string() const override { return "<Macro '" + def_->name + "'>"; }
  std::optional<Value> attribute(std::string_view name) const override {
    if (name == "name") return Value(def_->name);
    if (name == "arguments") {
      std::vector<Value> params(def_->params.begin(), def_->params.end());
      return Value::tuple(std::move(params));
    }
    if (name == "catch_kwargs") return Value(def_->uses_kwargs);
    if (name == "catch_varargs") return Value(def_->uses_varargs);
    if (name == "caller") return Value(def_->uses_caller);
    return std::nullopt;
  }
  Value call(Renderer& renderer, CallArgs& args) override { return renderer.invoke_macro(*def_, closure_, args); }

 private:
  const ast::MacroDef* def_;
  Scope* closure_;
};

// jinja2's LoopContext: the `loop` variable of a for loop.
class LoopContext : public Callable, public std::enable_shared_from_this<LoopContext> {
 public:
  LoopContext(std::vector<Value> items, int depth0, const ast::For* node, Scope* scope)
      : items_(std::move(items)), depth0_(depth0), node_(node), scope_(scope) {
    for (const Value& item : items_) depth_ = std::max(depth_, nesting_depth(item) + 1);
  }
  int depth() const override { return depth_; }

  std::string type_name() const override { return "LoopContext"; }
  std::string to_string() const override {
    return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(items_.size()) + ">";
  }

  std::optional<Value> attribute(std::string_view name) const override {
    const auto n = static_cast<int64_t>(items_.size());
    const auto i = static_cast<int64_t>(index0_);
    if (name == "index0") return Value(i);
    if (name == "index") return Value(i + 1);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "revindex") return Value(n - i);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i == n - 1);
    if (name == "length") return Value(n);
    if (name == "depth0") return Value(static_cast<int64_t>(depth0_));
    if (name == "depth") return Value(static_cast<int64_t>(depth0_ + 1));
    if (name == "previtem") {
      if (i == 0) return Value::undefined("there is no previous item");
      return items_[index0_ - 1];
    }
    if (name == "nextitem") {
      if (i + 1 >= n) return Value::undefined("there is no next item");
      return items_[index0_ + 1];
    }
    if (name == "cycle" || name == "changed") {
      auto self = std::const_pointer_cast<LoopContext>(shared_from_this());
      return Value(std::shared_ptr<Object>(std::make_shared<LoopMethod>(std::move(self), std::string(name))));
    }
    return std::nullopt;
  }

  // loop(children) in a `recursive` loop.
  Value call(Renderer& renderer, CallArgs& args) override {
    if (!node_->recursive)
      throw_type_error("Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.");
    if (args.positional.size() != 1 || !args.keyword.empty())
      throw_type_error("loop() takes exactly one argument");
    return renderer.recurse_loop(*node_, scope_, args.positional[0], depth0_ + 1);
  }

  void set_index(size_t i) { index0_ = i; }
  const Value& item(size_t i) const { return items_[i]; }
  void forget_changed() { last_changed_ = Value(); }

 private:
  // loop.cycle(...) and loop.changed(...).
  class LoopMethod : public Callable {
   public:
    LoopMethod(std::shared_ptr<LoopContext> loop, std::string name) : loop_(std::move(loop)), name_(std::move(name)) {}
    std::string type_name() const override { return "method"; }
    int depth() const override { return 1 + loop_->depth(); }
    Value call(Renderer&, CallArgs& args) override {
      if (name_ == "cycle") {
        if (args.positional.empty()) throw_type_error("no items for cycling given");
        return args.positional[loop_->index0_ % args.positional.size()];
      }
      Value current = Value::list(args.positional);
      if (loop_->has_last_changed_ && equals(loop_->last_changed_, current)) return Value(false);
      loop_->last_changed_ = std::move(current);
      loop_->has_last_changed_ = true;
      return Value(true);
    }

   private:
    std::shared_ptr<LoopContext> loop_;
    std::string name_;
  };

  std::vector<Value> items_;
  size_t index0_ = 0;
  int depth0_;
  const ast::For* node_;
  Scope* scope_;
  Value last_changed_;
  bool has_last_changed_ = false;
  int depth_ = 1;
};

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    const auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

Renderer::Renderer(const RenderOptions& options, const Value& context) : options_(options), context_(context) {}

Renderer::~Renderer() {
  // A namespace can hold itself ({% set ns.me = ns %}). Keep every mutable object alive while emptying them all,
  // so that none is destroyed halfway (a long chain of them would otherwise be freed recursively).
  std::vector<std::pair<std::shared_ptr<Object>, void (*)(Object&)>> alive;
  for (auto& [weak, clear] : mutables_)
    if (auto obj = weak.lock()) alive.emplace_back(std::move(obj), clear);
  for (auto& [obj, clear] : alive) clear(*obj);
}

void Renderer::track_mutable(const std::shared_ptr<Object>& object, void (*clear)(Object&)) {
  mutables_.emplace_back(object, clear);
}

std::string Renderer::render(const ast::Template& t) {
  std::string out;
  out_ = &out;
  Scope* root = new_scope(nullptr);
  exec_body(t.body, root);
  return out;
}

std::tm Renderer::now() const {
  if (options_.now) return options_.now();
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

void Renderer::charge(uint64_t steps) {
  steps_ += steps;
  if (steps_ > options_.max_steps) limit_error("template exceeded its work budget");
}

void Renderer::check_size(const Value& v) {
  if (nesting_depth(v) > kMaxValueDepth) limit_error("template built values nested too deeply");
  if (v.is_string()) {
    if (v.as_string().size() > options_.max_output_bytes) limit_error("template built a string over the output limit");
    charge(v.as_string().size() / 64);
  } else if (v.is_list()) {
    if (v.as_list().items.size() > options_.max_output_bytes / 16) limit_error("template built a list that is too long");
    charge(v.as_list().items.size() / 8);
  }
}

std::shared_ptr<Namespace> Renderer::new_namespace() {
  auto ns = std::make_shared<Namespace>();
  track_mutable(ns, [](Object& o) { static_cast<Namespace&>(o).clear(); });
  return ns;
}

Scope* Renderer::new_scope(Scope* parent) {
  scopes_.push_back(std::make_unique<Scope>(parent));
  return scopes_.back().get();
}

void Renderer::emit(std::string_view text) {
  if (out_->size() + text.size() > options_.max_output_bytes) limit_error("template output exceeds the output limit");
  out_->append(text);
}

std::string Renderer::capture(const ast::Body& body, Scope* scope) {
  std::string buffer;
  {
    const ScopedValue<std::string*> redirect(out_, &buffer);
    exec_body(body, new_scope(scope));
  }
  return buffer;
}

Value Renderer::lookup(const std::string& name, Scope* scope) const {
  if (const Value* v = scope->find(name)) return *v;
  if (context_.is_dict()) {
    if (const Value* v = context_.as_dict().find(std::string_view(name))) return *v;
  }
  if (auto g = find_global(name)) return *g;
  return Value::undefined("'" + name + "' is undefined");
}

Renderer::Flow Renderer::exec_body(const ast::Body& body, Scope* scope) {
  for (const auto& s : body) {
    const Flow f = exec(*s, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::exec(const ast::Stmt& s, Scope* scope) {
  charge(1);
  using K = ast::Stmt::Kind;
  switch (s.kind) {
    case K::kOutput: emit(static_cast<const ast::Output&>(s).text); break;
    case K::kPrint: emit(to_str(eval(*static_cast<const ast::Print&>(s).expr, scope))); break;
    case K::kIf: {
      const auto& node = static_cast<const ast::If&>(s);
      for (const auto& [test, body] : node.branches)
        if (truthy(eval(*test, scope))) return exec_body(body, scope);
      return exec_body(node.else_body, scope);
    }
    case K::kFor: {
      const auto& node = static_cast<const ast::For&>(s);
      exec_for(node, scope, eval(*node.iterable, scope), 0);
      break;
    }
    case K::kSet: {
      const auto& node = static_cast<const ast::Set&>(s);
      assign(node.target, eval(*node.value, scope), scope);
      break;
    }
    case K::kSetBlock: {
      const auto& node = static_cast<const ast::SetBlock&>(s);
      Value v(capture(node.body, scope));
      if (node.filter) v = apply_filter_chain(*node.filter, scope, v);
      assign(node.target, v, scope);
      break;
    }
    case K::kMacro: {
      const auto& def = *static_cast<const ast::Macro&>(s).def;
      scope->set(def.name, Value(std::shared_ptr<Object>(std::make_shared<Macro>(&def, scope))));
      break;
    }
    case K::kCallBlock: exec_call_block(static_cast<const ast::CallBlock&>(s), scope); break;
    case K::kFilterBlock: {
      const auto& node = static_cast<const ast::FilterBlock&>(s);
      const Value v = apply_filter_chain(*node.filter, scope, Value(capture(node.body, scope)));
      emit(to_str(v));
      break;
    }
    case K::kWith: {
      const auto& node = static_cast<const ast::With&>(s);
      std::vector<Value> values;
      for (const auto& [target, expr] : node.assignments) values.push_back(eval(*expr, scope));
      Scope* inner = new_scope(scope);
      for (size_t i = 0; i < values.size(); ++i) assign(node.assignments[i].first, values[i], inner);
      return exec_body(node.body, inner);
    }
    case K::kScope: exec_body(static_cast<const ast::Scope&>(s).body, new_scope(scope)); break;
    case K::kBreak: return Flow::kBreak;
    case K::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

void Renderer::exec_for(const ast::For& node, Scope* scope, const Value& iterable, int depth0) {
  std::vector<Value> items = iterate(iterable);
  if (node.filter) {
    // `for x in xs if cond`: the condition sees the loop target but not this loop's `loop`.
    std::vector<Value> kept;
    for (Value& item : items) {
      charge(1);
      Scope* test_scope = new_scope(scope);
      assign(node.target, item, test_scope);
      if (truthy(eval(*node.filter, test_scope))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(node.else_body, new_scope(scope));
    return;
  }
  const size_t n = items.size();
  auto loop = std::make_shared<LoopContext>(std::move(items), depth0, &node, scope);
  track_mutable(loop, [](Object& o) { static_cast<LoopContext&>(o).forget_changed(); });
  const Value loop_value{std::shared_ptr<Object>(loop)};
  for (size_t i = 0; i < n; ++i) {
    charge(1);
    loop->set_index(i);
    Scope* iteration = new_scope(scope);
    iteration->set("loop", loop_value);
    assign(node.target, loop->item(i), iteration);
    if (exec_body(node.body, iteration) == Flow::kBreak) break;
  }
}

Value Renderer::recurse_loop(const ast::For& node, Scope* scope, const Value& iterable, int depth0) {
  const ScopedValue<int> depth(call_depth_, call_depth_ + 1);
  if (call_depth_ > options_.max_call_depth) limit_error("recursive loop nested too deeply");
  std::string buffer;
  {
    const ScopedValue<std::string*> redirect(out_, &buffer);
    exec_for(node, scope, iterable, depth0);
  }
  return Value(std::move(buffer));
}

void Renderer::exec_call_block(const ast::CallBlock& node, Scope* scope) {
  const auto& call = static_cast<const ast::Call&>(*node.call);
  const Value callee = eval(*call.callee, scope);
  CallArgs args = eval_args(call.args, scope);
  args.keyword.emplace_back("caller", Value(std::shared_ptr<Object>(std::make_shared<Macro>(node.caller.get(), scope))));
  emit(to_str(this->call(callee, args)));
}

Value Renderer::invoke_macro(const ast::MacroDef& def, Scope* closure, CallArgs& args) {
  const size_t n = def.params.size();
  std::vector<std::optional<Value>> values(n);
  for (size_t i = 0; i < n && i < args.positional.size(); ++i) values[i] = args.positional[i];
  std::vector<std::pair<std::string, Value>> extra_kwargs;
  bool found_caller = false;
  for (auto& [key, value] : args.keyword) {
    bool bound = false;
    for (size_t i = args.positional.size(); i < n; ++i) {
      if (def.params[i] == key) {
        if (values[i]) throw_type_error("macro '" + def.name + "' got multiple values for argument '" + key + "'");
        values[i] = value;
        bound = true;
        found_caller = found_caller || key == "caller";
        break;
      }
    }
    if (!bound) extra_kwargs.emplace_back(key, value);
  }
  Value caller = Value::undefined("No caller defined");
  if (def.uses_caller && !found_caller) {
    for (auto it = extra_kwargs.begin(); it != extra_kwargs.end(); ++it) {
      if (it->first == "caller") {
        caller = it->second;
        extra_kwargs.erase(it);
        break;
      }
    }
  }
  if (!def.uses_kwargs && !extra_kwargs.empty()) {
    if (extra_kwargs.front().first == "caller")
      throw_type_error("macro '" + def.name +
                       "' was invoked with two values for the special caller argument. This is most likely a bug.");
    throw_type_error("macro '" + def.name + "' takes no keyword argument '" + extra_kwargs.front().first + "'");
  }
  if (!def.uses_varargs && args.positional.size() > n)
    throw_type_error("macro '" + def.name + "' takes not more than " + std::to_string(n) + " argument(s)");

  const ScopedValue<int> depth(call_depth_, call_depth_ + 1);
  if (call_depth_ > options_.max_call_depth) limit_error("macro calls nested too deeply");
  std::string buffer;
  {
    const ScopedValue<std::string*> redirect(out_, &buffer);
    Scope* scope = new_scope(closure);
    // Defaults are evaluated in the macro's scope, after the parameters before them are bound.
    const size_t first_default = n - def.defaults.size();
    for (size_t i = 0; i < n; ++i) {
      if (values[i]) {
        scope->set(def.params[i], *values[i]);
      } else if (i >= first_default) {
        scope->set(def.params[i], eval(*def.defaults[i - first_default], scope));
      } else {
        scope->set(def.params[i], Value::undefined("parameter '" + def.params[i] + "' was not provided"));
      }
    }
    if (def.uses_caller && !found_caller) scope->set("caller", caller);
    if (def.uses_kwargs) {
      Dict kw;
      for (auto& [k, v] : extra_kwargs) kw.set(Value(k), v);
      scope->set("kwargs", Value::dict(std::move(kw)));
    }
    if (def.uses_varargs) {
      std::vector<Value> rest;
      for (size_t i = n; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
      scope->set("varargs", Value::tuple(std::move(rest)));
    }
    exec_body(def.body, scope);
  }
  return Value(std::move(buffer));
}

void Renderer::assign(const ast::Target& target, const Value& v, Scope* scope) {
  switch (target.kind) {
    case ast::Target::Kind::kName: scope->set(target.name, v); return;
    case ast::Target::Kind::kTuple: {
      if (!v.is_list() && !v.is_dict() && !v.is_string() && !v.is_undefined())
        throw_type_error("cannot unpack non-iterable " + python_type_name(v) + " object");
      std::vector<Value> items = iterate(v);
      const size_t want = target.items.size();
      if (items.size() < want)
        throw_value_error("not enough values to unpack (expected " + std::to_string(want) + ", got " +
                          std::to_string(items.size()) + ")");
      if (items.size() > want) throw_value_error("too many values to unpack (expected " + std::to_string(want) + ")");
      for (size_t i = 0; i < want; ++i) assign(target.items[i], items[i], scope);
      return;
    }
    case ast::Target::Kind::kNamespaceAttr: {
      const Value ns = lookup(target.name, scope);
      auto* obj = ns.is_object() ? dynamic_cast<Namespace*>(ns.as_object().get()) : nullptr;
      if (obj == nullptr) throw JinjaError("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
      obj->set(target.attr, v);
      return;
    }
  }
}

Value Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) throw JinjaError(callee.undefined_error(), callee.undefined_message());
  if (callee.is_object()) {
    if (auto* fn = dynamic_cast<Callable*>(callee.as_object().get())) {
      Value result = fn->call(*this, args);
      check_size(result);
      return result;
    }
  }
  throw_type_error("'" + python_type_name(callee) + "' object is not callable");
}

Value Renderer::apply_filter(std::string_view name, const Value& subject, CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (fn == nullptr) throw JinjaError("TemplateRuntimeError", "No filter named '" + std::string(name) + "' found.");
  Value result = fn(*this, subject, args);
  check_size(result);
  return result;
}

bool Renderer::apply_test(std::string_view name, const Value& subject, CallArgs& args) {
  const TestFn fn = find_test(name);
  if (fn == nullptr) throw JinjaError("TemplateRuntimeError", "No test named '" + std::string(name) + "' found.");
  return fn(*this, subject, args);
}

CallArgs Renderer::eval_args(const ast::Arguments& a, Scope* scope) {
  CallArgs args;
  for (const auto& e : a.positional) args.positional.push_back(eval(*e, scope));
  for (const auto& [key, e] : a.keyword) args.keyword.emplace_back(key, eval(*e, scope));
  if (a.star_args) {
    for (Value& v : iterate(eval(*a.star_args, scope))) args.positional.push_back(std::move(v));
  }
  if (a.star_kwargs) {
    const Value kw = eval(*a.star_kwargs, scope);
    if (!kw.is_dict()) throw_type_error("argument after ** must be a mapping, not " + python_type_name(kw));
    for (const auto& [k, v] : kw.as_dict().entries()) {
      if (!k.is_string()) throw_type_error("keywords must be strings");
      args.keyword.emplace_back(k.as_string(), v);
    }
  }
  return args;
}

Value Renderer::apply_filter_chain(const ast::Expr& e, Scope* scope, const Value& input) {
  const auto& f = static_cast<const ast::Filter&>(e);
  const Value subject = f.subject ? apply_filter_chain(*f.subject, scope, input) : input;
  CallArgs args = eval_args(f.args, scope);
  return apply_filter(f.name, subject, args);
}

Value Renderer::eval(const ast::Expr& e, Scope* scope) {
  charge(1);
  using K = ast::Expr::Kind;
  switch (e.kind) {
    case K::kLiteral: return static_cast<const ast::Literal&>(e).value;
    case K::kName: return lookup(static_cast<const ast::Name&>(e).name, scope);
    case K::kList: {
      const auto& node = static_cast<const ast::ListExpr&>(e);
      std::vector<Value> items;
      items.reserve(node.items.size());
      for (const auto& item : node.items) items.push_back(eval(*item, scope));
      Value v = node.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      check_size(v);
      return v;
    }
    case K::kDict: {
      Dict d;
      for (const auto& [k, v] : static_cast<const ast::DictExpr&>(e).items) {
        Value key = eval(*k, scope);
        if (!is_hashable(key)) throw_type_error("unhashable type: '" + python_type_name(key) + "'");
        d.set(std::move(key), eval(*v, scope));
      }
      Value v = Value::dict(std::move(d));
      check_size(v);
      return v;
    }
    case K::kGetAttr: {
      const auto& node = static_cast<const ast::GetAttr&>(e);
      return get_attribute(eval(*node.object, scope), node.name);
    }
    case K::kGetItem: {
      const auto& node = static_cast<const ast::GetItem&>(e);
      const Value obj = eval(*node.object, scope);
      if (node.key->kind == K::kSlice) {
        const auto& sl = static_cast<const ast::Slice&>(*node.key);
        auto bound = [&](const ast::ExprPtr& p) { return p ? eval(*p, scope) : Value::none(); };
        const Value start = bound(sl.start);
        const Value stop = bound(sl.stop);
        const Value step = bound(sl.step);
        return get_slice(obj, start, stop, step);
      }
      return get_item(obj, eval(*node.key, scope));
    }
    case K::kSlice: throw_type_error("a slice is only valid as a subscript");
    case K::kCall: {
      const auto& node = static_cast<const ast::Call&>(e);
      const Value callee = eval(*node.callee, scope);
      CallArgs args = eval_args(node.args, scope);
      return call(callee, args);
    }
    case K::kFilter: {
      const auto& node = static_cast<const ast::Filter&>(e);
      const Value subject = eval(*node.subject, scope);
      CallArgs args = eval_args(node.args, scope);
      return apply_filter(node.name, subject, args);
    }
    case K::kTest: {
      const auto& node = static_cast<const ast::Test&>(e);
      const Value subject = eval(*node.subject, scope);
      CallArgs args = eval_args(node.args, scope);
      return Value(apply_test(node.name, subject, args));
    }
    case K::kUnary: {
      const auto& node = static_cast<const ast::Unary&>(e);
      const Value v = eval(*node.operand, scope);
      switch (node.op) {
        case ast::UnaryOp::kNot: return Value(!truthy(v));
        case ast::UnaryOp::kNeg: return negate(v);
        case ast::UnaryOp::kPos: return unary_plus(v);
      }
      return v;
    }
    case K::kBinary: return eval_binary(static_cast<const ast::Binary&>(e), scope);
    case K::kConcat: {
      std::string out;
      for (const auto& part : static_cast<const ast::Concat&>(e).parts) {
        out += to_str(eval(*part, scope));
        if (out.size() > options_.max_output_bytes) limit_error("template built a string over the output limit");
      }
      Value v(std::move(out));
      check_size(v);
      return v;
    }
    case K::kCompare: return eval_compare(static_cast<const ast::Compare&>(e), scope);
    case K::kCondExpr: {
      const auto& node = static_cast<const ast::CondExpr&>(e);
      if (truthy(eval(*node.test, scope))) return eval(*node.then_expr, scope);
      if (node.else_expr) return eval(*node.else_expr, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(node.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

Value Renderer::eval_binary(const ast::Binary& b, Scope* scope) {
  const Value left = eval(*b.left, scope);
  if (b.op == ast::BinaryOp::kAnd) return truthy(left) ? eval(*b.right, scope) : left;
  if (b.op == ast::BinaryOp::kOr) return truthy(left) ? left : eval(*b.right, scope);
  const Value right = eval(*b.right, scope);
  Value result;
  switch (b.op) {
    case ast::BinaryOp::kAdd: result = add(left, right); break;
    case ast::BinaryOp::kSub: result = subtract(left, right); break;
    case ast::BinaryOp::kMul: result = multiply(left, right, options_.max_output_bytes); break;
    case ast::BinaryOp::kDiv: result = true_divide(left, right); break;
    case ast::BinaryOp::kFloorDiv: result = floor_divide(left, right); break;
    case ast::BinaryOp::kMod: result = modulo(left, right); break;
    case ast::BinaryOp::kPow: result = power(left, right); break;
    default: break;
  }
  check_size(result);
  return result;
}

Value Renderer::eval_compare(const ast::Compare& c, Scope* scope) {
  Value left = eval(*c.first, scope);
  for (const auto& [op, expr] : c.rest) {
    Value right = eval(*expr, scope);
    bool ok = false;
    switch (op) {
      case ast::CompareOp::kEq: ok = equals(left, right); break;
      case ast::CompareOp::kNe: ok = !equals(left, right); break;
      case ast::CompareOp::kLt: ok = compare(left, right, "<"); break;
      case ast::CompareOp::kLe: ok = compare(left, right, "<="); break;
      case ast::CompareOp::kGt: ok = compare(left, right, ">"); break;
      case ast::CompareOp::kGe: ok = compare(left, right, ">="); break;
      case ast::CompareOp::kIn: ok = contains(right, left); break;
      case ast::CompareOp::kNotIn: ok = !contains(right, left); break;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

}  // namespace pagoda::jinja
