#include "io/gguf_value.h"

#include <cstdio>

namespace pagoda {

const char* gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "invalid";
}

bool gguf_value_type_valid(uint32_t type) { return type <= static_cast<uint32_t>(GgufValueType::FLOAT64); }

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::UINT64:
    case GgufValueType::INT64: return true;
    default: return false;
  }
}

std::string GgufValue::to_display_string(size_t max_items) const {
  if (auto* u = std::get_if<uint64_t>(&data)) return std::to_string(*u);
  if (auto* i = std::get_if<int64_t>(&data)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&data)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", *d);
    return buf;
  }
  if (auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&data)) {
    std::string shown = s->size() > 60 ? s->substr(0, 60) + "..." : *s;
    std::string out = "\"";
    for (char c : shown) out += (c == '\n') ? std::string("\\n") : std::string(1, c);
    return out + "\"";
  }
  const auto& arr = *std::get<std::shared_ptr<GgufArray>>(data);
  std::string out =
      "[" + std::string(gguf_value_type_name(arr.elem_type)) + " x " + std::to_string(arr.items.size()) + "]";
  if (!arr.items.empty() && max_items > 0) {
    out += " {";
    for (size_t i = 0; i < arr.items.size() && i < max_items; ++i)
      out += (i ? ", " : "") + arr.items[i].to_display_string(0);
    if (arr.items.size() > max_items) out += ", ...";
    out += "}";
  }
  return out;
}

}  // namespace pagoda

namespace pagoda {

GgufValue gguf_uint32(uint32_t v) { return GgufValue{GgufValueType::UINT32, uint64_t{v}}; }
GgufValue gguf_int32(int32_t v) { return GgufValue{GgufValueType::INT32, int64_t{v}}; }
GgufValue gguf_float32(float v) { return GgufValue{GgufValueType::FLOAT32, static_cast<double>(v)}; }
GgufValue gguf_bool(bool v) { return GgufValue{GgufValueType::BOOL, v}; }
GgufValue gguf_string(std::string v) { return GgufValue{GgufValueType::STRING, std::move(v)}; }

GgufValue gguf_string_array(std::vector<std::string> items) {
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = GgufValueType::STRING;
  arr->items.reserve(items.size());
  for (auto& s : items) arr->items.push_back(gguf_string(std::move(s)));
  return GgufValue{GgufValueType::ARRAY, std::move(arr)};
}

GgufValue gguf_float32_array(const std::vector<float>& items) {
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = GgufValueType::FLOAT32;
  arr->items.reserve(items.size());
  for (float f : items) arr->items.push_back(gguf_float32(f));
  return GgufValue{GgufValueType::ARRAY, std::move(arr)};
}

GgufValue gguf_int32_array(const std::vector<int32_t>& items) {
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = GgufValueType::INT32;
  arr->items.reserve(items.size());
  for (int32_t i : items) arr->items.push_back(gguf_int32(i));
  return GgufValue{GgufValueType::ARRAY, std::move(arr)};
}

}  // namespace pagoda
