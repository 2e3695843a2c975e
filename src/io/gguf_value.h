// A GGUF metadata value: one of the scalar kinds, a string, or an array (of scalars, strings or arrays).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace pagoda {

enum class GgufValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);
bool gguf_value_type_valid(uint32_t type);

struct GgufValue;

struct GgufArray {
  GgufValueType elem_type = GgufValueType::UINT8;
  std::vector<GgufValue> items;
};

struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  // Integers of every width are widened to int64/uint64, floats to double; `type` keeps the file's kind.
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<GgufArray>> data;

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }
  bool is_string() const { return type == GgufValueType::STRING; }
  bool is_array() const { return type == GgufValueType::ARRAY; }
  // Short human-readable rendering (arrays abbreviated), for `pagoda inspect`.
  std::string to_display_string(size_t max_items = 8) const;
};

}  // namespace pagoda

namespace pagoda {

// Builders for metadata assembled in memory (a Hugging Face folder presented as GGUF, `pagoda convert`).
GgufValue gguf_uint32(uint32_t v);
GgufValue gguf_int32(int32_t v);
GgufValue gguf_float32(float v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_string_array(std::vector<std::string> items);
GgufValue gguf_float32_array(const std::vector<float>& items);
GgufValue gguf_int32_array(const std::vector<int32_t>& items);

}  // namespace pagoda
