#include "jinja/value.h"

#include <algorithm>

#include "jinja/value_ops.h"

namespace pagoda::jinja {

std::string Object::to_string() const { return "<" + type_name() + " object>"; }

std::optional<Value> Object::attribute(std::string_view) const { return std::nullopt; }

Value Value::undefined(std::string message) {
  Value v;
  v.data_ = Undefined{std::make_shared<const std::string>(std::move(message))};
  return v;
}

namespace {

Value make_list(std::vector<Value> items, bool is_tuple) {
  auto l = std::make_shared<List>();
  for (const Value& item : items) l->depth = std::max(l->depth, nesting_depth(item) + 1);
  l->items = std::move(items);
  l->is_tuple = is_tuple;
  return Value(std::shared_ptr<const List>(std::move(l)));
}

}  // namespace

Value Value::list(std::vector<Value> items) { return make_list(std::move(items), false); }

Value Value::tuple(std::vector<Value> items) { return make_list(std::move(items), true); }

Value Value::dict(Dict d) { return Value(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(d)))); }

Value Value::forbidden(std::string message) {
  Value v;
  v.data_ = Undefined{std::make_shared<const std::string>(std::move(message)), true};
  return v;
}

std::string Value::undefined_error() const {
  return std::get<Undefined>(data_).forbidden ? "SecurityError" : "UndefinedError";
}

std::string Value::undefined_message() const {
  const auto& u = std::get<Undefined>(data_);
  return u.message ? *u.message : "value is undefined";
}

namespace {

struct TooDeep {};

template <typename Json>
Value from_json_impl(const Json& j, int depth) {
  if (depth > kMaxValueDepth) throw TooDeep{};
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_impl(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(Value(it.key()), from_json_impl(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary / discarded: not produced by JSON text
  }
}

// Dict keys compare the Python way: 1, 1.0 and True are the same key.
bool same_key(const Value& a, const Value& b) { return equals(a, b); }

template <typename Json>
Result<Value> from_json_checked(const Json& j) {
  try {
    return from_json_impl(j, 1);
  } catch (const TooDeep&) {
    return make_error("JSON value nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
  }
}

}  // namespace

Result<Value> Value::from_json(const nlohmann::ordered_json& j) { return from_json_checked(j); }
Result<Value> Value::from_json(const nlohmann::json& j) { return from_json_checked(j); }

const Value* Dict::find(std::string_view key) const {
  if (entries_.size() > 8) {
    const auto it = string_index_.find(std::string(key));
    return it == string_index_.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& [k, v] : entries_)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries_)
    if (!k.is_string() && same_key(k, key)) return &v;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  depth_ = std::max({depth_, nesting_depth(key) + 1, nesting_depth(value) + 1});
  if (key.is_string()) {
    const auto it = string_index_.find(key.as_string());
    if (it != string_index_.end()) {
      entries_[it->second].second = std::move(value);
      return;
    }
    string_index_.emplace(key.as_string(), entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
    return;
  }
  for (auto& [k, v] : entries_) {
    if (!k.is_string() && same_key(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

}  // namespace pagoda::jinja
