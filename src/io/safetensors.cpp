#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace pagoda {
namespace {

// dtype name -> ggml type; nullopt-like false when pagoda cannot compute with it.
bool dtype_to_ggml(const std::string& dtype, GgmlType* type, uint64_t* size) {
  if (dtype == "F32") {
    *type = GgmlType::F32;
    *size = 4;
  } else if (dtype == "F16") {
    *type = GgmlType::F16;
    *size = 2;
  } else if (dtype == "BF16") {
    *type = GgmlType::BF16;
    *size = 2;
  } else {
    return false;
  }
  return true;
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

Result<SafetensorsFile> SafetensorsFile::parse(const uint8_t* data, size_t size, std::string source_name) {
  SafetensorsFile file;
  file.source_name_ = std::move(source_name);
  const std::string name = file.source_name_;
  // Every access is type-checked first; should one still throw, the file is reported, never the process aborted.
  try {
    return parse_unchecked(std::move(file), data, size);
  } catch (const nlohmann::json::exception& e) {
    return make_error(name + ": malformed header (" + e.what() + ")");
  }
}

Result<SafetensorsFile> SafetensorsFile::parse_unchecked(SafetensorsFile file, const uint8_t* data, size_t size) {
  auto fail = [&](const std::string& what) { return make_error(file.source_name_ + ": " + what); };
  if (size < 8) return fail("too small to be a safetensors file (" + std::to_string(size) + " bytes)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
  if (header_len > kSafetensorsMaxHeaderBytes)
    return fail("header length " + std::to_string(header_len) + " exceeds the limit of " +
                std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  if (header_len > size - 8)
    return fail("header length " + std::to_string(header_len) + " extends past the end of the file (" +
                std::to_string(size) + " bytes)");
  const char* header = reinterpret_cast<const char*>(data + 8);
  if (header_len == 0 || header[0] != '{') return fail("the header is not a JSON object");
  nlohmann::json j = nlohmann::json::parse(header, header + header_len, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail("the header is not valid JSON (or not an object)");
  const uint8_t* body = data + 8 + header_len;
  const uint64_t body_size = size - 8 - header_len;

  for (const auto& item : j.items()) {
    const std::string name = item.key();  // a named copy: lambdas below capture it
    const auto& entry = item.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) return fail("__metadata__ must be an object of strings");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return fail("__metadata__ value '" + k + "' is not a string");
        file.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) { return fail("tensor '" + name + "': " + what); };
    if (!entry.is_object()) return bad("entry is not an object");
    const auto dtype = entry.find("dtype");
    const auto shape = entry.find("shape");
    const auto offsets = entry.find("data_offsets");
    if (dtype == entry.end() || !dtype->is_string()) return bad("'dtype' is missing or not a string");
    if (shape == entry.end() || !shape->is_array()) return bad("'shape' is missing or not an array");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
      return bad("'data_offsets' must be an array [begin, end]");
    SafetensorsTensor t;
    t.name = name;
    uint64_t elem_size = 0;
    const std::string dt = dtype->get<std::string>();
    if (!dtype_to_ggml(dt, &t.type, &elem_size))
      return bad("dtype " + dt.substr(0, 32) + " is not supported (supported: F32, F16, BF16)");
    if (shape->size() > kSafetensorsMaxDims)
      return bad("has " + std::to_string(shape->size()) + " dimensions (at most " +
                 std::to_string(kSafetensorsMaxDims) + ")");
    uint64_t count = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) return bad("shape entries must be non-negative integers");
      const uint64_t n = d.get<uint64_t>();
      t.shape.push_back(n);
      if (mul_overflows(count, n, &count)) return bad("shape overflows");
    }
    uint64_t expected = 0;
    if (mul_overflows(count, elem_size, &expected)) return bad("shape overflows");
    if (!(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      return bad("data_offsets must be non-negative integers");
    const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > body_size)
      return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") lie outside the data section of " + std::to_string(body_size) + " bytes");
    if (end - begin != expected)
      return bad("holds " + std::to_string(end - begin) + " bytes but " + dt + " " + std::to_string(count) +
                 " elements need " + std::to_string(expected));
    t.data = body + begin;
    t.n_bytes = expected;
    file.index_[name] = file.tensors_.size();
    file.tensors_.push_back(std::move(t));
  }
  // No two tensors may share bytes.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : file.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsTensor* a, const SafetensorsTensor* b) { return a->data < b->data; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->data + by_offset[i - 1]->n_bytes > by_offset[i]->data)
      return fail("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
  return file;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto mapping = MappedFile::open(path);
  if (!mapping.ok()) return mapping.error();
  auto file = parse((*mapping)->data(), (*mapping)->size(), path);
  if (!file.ok()) return file.error();
  file->mapping_ = std::move(*mapping);
  return file;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace pagoda
