// Test helper: writes GGUF v3 metadata-only files into memory, so tokenizer tests can build small or
// deliberately broken vocabularies without a GGUF writer in the library.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "io/gguf_file.h"

namespace pagoda::test_util {

class GgufTestBytes {
 public:
  GgufTestBytes& add_string(const std::string& key, const std::string& value) {
    header(key, GgufValueType::STRING);
    put_string(value);
    return *this;
  }
  GgufTestBytes& add_u32(const std::string& key, uint32_t value) {
    header(key, GgufValueType::UINT32);
    put(value);
    return *this;
  }
  GgufTestBytes& add_bool(const std::string& key, bool value) {
    header(key, GgufValueType::BOOL);
    put(static_cast<uint8_t>(value));
    return *this;
  }
  GgufTestBytes& add_strings(const std::string& key, const std::vector<std::string>& values) {
    array_header(key, GgufValueType::STRING, values.size());
    for (const auto& v : values) put_string(v);
    return *this;
  }
  GgufTestBytes& add_f32s(const std::string& key, const std::vector<float>& values) {
    array_header(key, GgufValueType::FLOAT32, values.size());
    for (float v : values) put(v);
    return *this;
  }
  GgufTestBytes& add_i32s(const std::string& key, const std::vector<int32_t>& values) {
    array_header(key, GgufValueType::INT32, values.size());
    for (int32_t v : values) put(v);
    return *this;
  }
  // Copies every metadata entry of `file` except the keys in `skip` (to derive variants of real vocabularies).
  GgufTestBytes& copy_from(const GgufFile& file, const std::set<std::string>& skip = {}) {
    for (const auto& [key, value] : file.metadata()) {
      if (skip.count(key)) continue;
      header(key, value.type);
      put_value(value);
    }
    return *this;
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out;
    auto append = [&](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      out.insert(out.end(), b, b + n);
    };
    const uint32_t magic = kGgufMagic, version = 3;
    const uint64_t n_tensors = 0;
    append(&magic, 4);
    append(&version, 4);
    append(&n_tensors, 8);
    append(&n_kv_, 8);
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  template <typename T>
  void put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    body_.insert(body_.end(), b, b + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void header(const std::string& key, GgufValueType type) {
    put_string(key);
    put(static_cast<uint32_t>(type));
    ++n_kv_;
  }
  void array_header(const std::string& key, GgufValueType elem, size_t n) {
    header(key, GgufValueType::ARRAY);
    put(static_cast<uint32_t>(elem));
    put(static_cast<uint64_t>(n));
  }
  void put_value(const GgufValue& v) {
    switch (v.type) {
      case GgufValueType::UINT8: put(static_cast<uint8_t>(std::get<uint64_t>(v.data))); break;
      case GgufValueType::INT8: put(static_cast<int8_t>(std::get<int64_t>(v.data))); break;
      case GgufValueType::UINT16: put(static_cast<uint16_t>(std::get<uint64_t>(v.data))); break;
      case GgufValueType::INT16: put(static_cast<int16_t>(std::get<int64_t>(v.data))); break;
      case GgufValueType::UINT32: put(static_cast<uint32_t>(std::get<uint64_t>(v.data))); break;
      case GgufValueType::INT32: put(static_cast<int32_t>(std::get<int64_t>(v.data))); break;
      case GgufValueType::UINT64: put(std::get<uint64_t>(v.data)); break;
      case GgufValueType::INT64: put(std::get<int64_t>(v.data)); break;
      case GgufValueType::FLOAT32: put(static_cast<float>(std::get<double>(v.data))); break;
      case GgufValueType::FLOAT64: put(std::get<double>(v.data)); break;
      case GgufValueType::BOOL: put(static_cast<uint8_t>(std::get<bool>(v.data))); break;
      case GgufValueType::STRING: put_string(std::get<std::string>(v.data)); break;
      case GgufValueType::ARRAY: {
        const auto& arr = *std::get<std::shared_ptr<GgufArray>>(v.data);
        put(static_cast<uint32_t>(arr.elem_type));
        put(static_cast<uint64_t>(arr.items.size()));
        for (const auto& item : arr.items) put_value(item);
        break;
      }
    }
  }

  std::vector<uint8_t> body_;
  uint64_t n_kv_ = 0;
};

}  // namespace pagoda::test_util
