// Value: what a Jinja template computes with. It mirrors the Python objects that Hugging Face chat templates see
// when transformers renders them (dicts and lists from JSON, str, int, float, bool, None) plus jinja2's Undefined
// and a few host objects (namespace(), loop, macros, bound methods).
//
// Lists and dicts are immutable and shared: the renderer runs templates the way jinja2's
// ImmutableSandboxedEnvironment does, where list.append / dict.update raise SecurityError, so nothing ever needs
// to mutate a container after it is built. Copying a Value is therefore cheap for containers.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "util/result.h"

namespace pagoda::jinja {

// How deeply lists, dicts and objects may nest. The renderer refuses to build deeper values and from_json refuses
// deeper JSON, so that everything recursing over values (repr, tojson, ==, destruction) has a bounded depth.
inline constexpr int kMaxValueDepth = 256;

class Value;
class Dict;
class Object;

// A Python list, or a tuple when `is_tuple` (tuples print as "(a, b)" and do not concatenate with lists).
struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;  // 1 + the deepest item's nesting_depth()
};

// jinja2's Undefined: what a missing variable, key or attribute evaluates to. Printing it gives "", iterating it
// gives nothing, but most other uses (arithmetic, attribute access, calling it) fail with `message`.
struct Undefined {
  std::shared_ptr<const std::string> message;  // e.g. "'dict object' has no attribute 'content'"; may be null
  bool forbidden = false;  // an attribute the sandbox refuses (list.append): misuse is a SecurityError
};

// Host objects: namespace(), the loop variable, macros, bound methods, builtin functions. The renderer defines
// the concrete classes.
class Object {
 public:
  virtual ~Object() = default;
  // Python's name for the object's type, as jinja2's error messages show it ("Namespace", "LoopContext", ...).
  virtual std::string type_name() const = 0;
  // str(obj).
  virtual std::string to_string() const;
  // obj.name: nullopt when the object has no such attribute.
  virtual std::optional<Value> attribute(std::string_view name) const;
  // Nesting depth of the values the object holds, as for List::depth.
  virtual int depth() const { return 1; }
};

class Value {
 public:
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kObject };

  Value() = default;  // undefined
  Value(bool b) : data_(b) {}                       // NOLINT(google-explicit-constructor)
  Value(int i) : data_(static_cast<int64_t>(i)) {}  // NOLINT(google-explicit-constructor)
  Value(int64_t i) : data_(i) {}                    // NOLINT(google-explicit-constructor)
  Value(double d) : data_(d) {}                     // NOLINT(google-explicit-constructor)
  Value(std::string s) : data_(std::move(s)) {}     // NOLINT(google-explicit-constructor)
  Value(std::string_view s) : data_(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Value(const char* s) : data_(std::string(s)) {}       // NOLINT(google-explicit-constructor)
  Value(std::shared_ptr<const List> l) : data_(std::move(l)) {}  // NOLINT(google-explicit-constructor)
  Value(std::shared_ptr<const Dict> d) : data_(std::move(d)) {}  // NOLINT(google-explicit-constructor)
  Value(std::shared_ptr<Object> o) : data_(std::move(o)) {}      // NOLINT(google-explicit-constructor)

  static Value none() {
    Value v;
    v.data_ = nullptr;
    return v;
  }
  static Value undefined(std::string message);
  // The sandbox's "unsafe undefined": what a forbidden attribute such as list.append evaluates to.
  static Value forbidden(std::string message);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(Dict d);

  // JSON → Value, keeping the order of object keys (messages' key order shows in tojson output). Integers stay
  // int, other numbers become float, like Python's json.loads. Fails for JSON nested deeper than kMaxValueDepth.
  static Result<Value> from_json(const nlohmann::ordered_json& j);
  static Result<Value> from_json(const nlohmann::json& j);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }  // list or tuple
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_object() const { return kind() == Kind::kObject; }
  // bool, int or float: Python's numbers (bool is an int subclass there).
  bool is_number() const { return is_bool() || is_int() || is_float(); }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  const std::shared_ptr<Object>& as_object() const { return std::get<std::shared_ptr<Object>>(data_); }
  const std::shared_ptr<const List>& list_ptr() const { return std::get<std::shared_ptr<const List>>(data_); }
  const std::shared_ptr<const Dict>& dict_ptr() const { return std::get<std::shared_ptr<const Dict>>(data_); }
  // The message an undefined value reports when it is misused, and the Python exception it raises then
  // ("UndefinedError", or "SecurityError" for a forbidden attribute).
  std::string undefined_message() const;
  std::string undefined_error() const;

 private:
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>, std::shared_ptr<Object>>
      data_;
};

// A Python dict: keys keep their insertion order. Keys are str, int, float, bool, None or tuples of those, compared
// the Python way (1, 1.0 and True are the same key).
class Dict {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Inserts, or replaces the value and keeps the key's first position (Python semantics).
  void set(Value key, Value value);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  int depth() const { return depth_; }

 private:
  std::vector<std::pair<Value, Value>> entries_;
  int depth_ = 1;
  std::unordered_map<std::string, size_t> string_index_;  // position of each str key
};

// 0 for scalars; for containers and objects, how deeply values nest inside.
inline int nesting_depth(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kList: return v.as_list().depth;
    case Value::Kind::kDict: return v.as_dict().depth();
    case Value::Kind::kObject: return v.as_object()->depth();
    default: return 0;
  }
}

}  // namespace pagoda::jinja
