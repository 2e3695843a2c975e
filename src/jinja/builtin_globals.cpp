// Global functions: jinja2's DEFAULT_NAMESPACE (range, dict, namespace, cycler, joiner) and the two transformers
// adds to chat templates (raise_exception, strftime_now).
#include <algorithm>
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/jinja_error.h"
#include "jinja/renderer.h"
#include "jinja/value_ops.h"

namespace pagoda::jinja {

namespace {

// The sandbox's limit on range() (jinja2.sandbox.MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value g_range(Renderer&, CallArgs& args) {
  if (!args.keyword.empty()) throw_type_error("range() takes no keyword arguments");
  const size_t n = args.positional.size();
  if (n < 1 || n > 3) throw_type_error("range expected 1 to 3 arguments, got " + std::to_string(n));
  int64_t v[3];
  for (size_t i = 0; i < n; ++i) {
    const auto x = as_integer(args.positional[i]);
    if (!x) throw_type_error("'" + python_type_name(args.positional[i]) + "' object cannot be interpreted as an integer");
    v[i] = *x;
  }
  const int64_t start = n == 1 ? 0 : v[0];
  const int64_t stop = n == 1 ? v[0] : v[1];
  const int64_t step = n == 3 ? v[2] : 1;
  if (step == 0) throw_value_error("range() arg 3 must not be zero");
  // Count without overflow: the number of values start + k*step before stop.
  const long double span = step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  const long double count = span <= 0 ? 0 : (span + (step > 0 ? step : -step) - 1) / (step > 0 ? step : -step);
  if (count > kMaxRange)
    throw JinjaError("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> items;
  const auto c = static_cast<int64_t>(count);
  items.reserve(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) items.emplace_back(start + k * step);
  return Value::list(std::move(items));  // a list where Python has a range object
}

// dict(**kwargs), dict(mapping) or dict(pairs).
Dict dict_from(const CallArgs& args, const char* fn) {
  Dict d;
  if (args.positional.size() > 1) throw_type_error(std::string(fn) + " expected at most 1 argument");
  if (args.positional.size() == 1) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const Value& pair : iterate(src)) {
        const std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) throw_value_error("dictionary update sequence element has length " +
                                              std::to_string(kv.size()) + "; 2 is required");
        if (!is_hashable(kv[0])) throw_type_error("unhashable type: '" + python_type_name(kv[0]) + "'");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value(k), v);
  return d;
}

Value g_dict(Renderer&, CallArgs& args) { return Value::dict(dict_from(args, "dict")); }

Value g_namespace(Renderer& r, CallArgs& args) {
  auto ns = r.new_namespace();
  const Dict attrs = dict_from(args, "namespace");  // named: a temporary would die before the loop body
  for (const auto& [k, v] : attrs.entries()) ns->set(to_str(k), v);
  return Value(std::shared_ptr<Object>(std::move(ns)));
}

Value g_raise_exception(Renderer&, CallArgs& args) {
  ArgBinder b("raise_exception", args, {"message"});
  throw JinjaError("TemplateError", to_str(b.required(0)));
}

Value g_strftime_now(Renderer& r, CallArgs& args) {
  ArgBinder b("strftime_now", args, {"format"});
  const Value& format = b.required(0);
  if (!format.is_string()) throw_type_error("strftime() argument 1 must be str, not " + python_type_name(format));
  const std::string& fmt = format.as_string();
  if (fmt.empty()) return Value("");
  if (fmt.size() > 4096) throw_value_error("strftime format too long");
  const std::tm tm = r.now();
  // strftime returns 0 both for "buffer too small" and for an empty result: grow a few times, then accept "".
  for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
    std::string buf(size, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    if (n > 0) {
      buf.resize(n);
      return Value(std::move(buf));
    }
  }
  return Value("");
}

// cycler(a, b, ...): .next() walks the items round, .current, .reset().
class Cycler : public Object, public std::enable_shared_from_this<Cycler> {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  int depth() const override {
    int d = 1;
    for (const Value& item : items_) d = std::max(d, nesting_depth(item) + 1);
    return d;
  }
  std::optional<Value> attribute(std::string_view name) const override;
  std::vector<Value> items_;
  size_t pos_ = 0;
};

class CyclerMethod : public Callable {
 public:
  CyclerMethod(std::shared_ptr<Cycler> c, std::string name) : cycler_(std::move(c)), name_(std::move(name)) {}
  std::string type_name() const override { return "method"; }
  int depth() const override { return 1 + cycler_->depth(); }
  Value call(Renderer&, CallArgs& args) override {
    ArgBinder(name_, args, {});
    if (name_ == "reset") {
      cycler_->pos_ = 0;
      return Value::none();
    }
    Value v = cycler_->items_[cycler_->pos_];
    cycler_->pos_ = (cycler_->pos_ + 1) % cycler_->items_.size();
    return v;
  }

 private:
  std::shared_ptr<Cycler> cycler_;
  std::string name_;
};

std::optional<Value> Cycler::attribute(std::string_view name) const {
  if (name == "current") return items_[pos_];
  if (name == "next" || name == "reset") {
    auto self = std::const_pointer_cast<Cycler>(shared_from_this());
    return Value(std::shared_ptr<Object>(std::make_shared<CyclerMethod>(std::move(self), std::string(name))));
  }
  return std::nullopt;
}

Value g_cycler(Renderer&, CallArgs& args) {
  if (args.positional.empty()) throw_type_error("at least one item has to be provided");
  auto c = std::make_shared<Cycler>(args.positional);
  return Value(std::shared_ptr<Object>(std::move(c)));
}

// joiner(sep): "" the first time it is called, sep afterwards.
class Joiner : public Callable {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  Value call(Renderer&, CallArgs& args) override {
    ArgBinder("joiner", args, {});
    if (!used_) {
      used_ = true;
      return Value("");
    }
    return Value(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

Value g_joiner(Renderer&, CallArgs& args) {
  ArgBinder b("joiner", args, {"sep"});
  return Value(std::shared_ptr<Object>(std::make_shared<Joiner>(b.has(0) ? to_str(b.get(0)) : ", ")));
}

struct NamedGlobal {
  std::string_view name;
  BuiltinFunction::Fn fn;
};

constexpr NamedGlobal kGlobals[] = {
    {"range", g_range},
    {"dict", g_dict},
    {"namespace", g_namespace},
    {"cycler", g_cycler},
    {"joiner", g_joiner},
    {"raise_exception", g_raise_exception},
    {"strftime_now", g_strftime_now},
};

}  // namespace

std::optional<Value> find_global(std::string_view name) {
  for (const auto& g : kGlobals)
    if (g.name == name) return Value(std::shared_ptr<Object>(std::make_shared<BuiltinFunction>(std::string(name), g.fn)));
  return std::nullopt;
}

}  // namespace pagoda::jinja
