// GGUF reader (format versions 2 and 3). The file is memory-mapped; metadata is parsed into values and
// tensor infos are validated against the file before anything uses them: every count, size and offset is
// checked, so a truncated or hostile file yields an Error naming what is wrong, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "io/gguf_value.h"
#include "util/mapped_file.h"
#include "util/result.h"

namespace pagoda {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kGgufDefaultAlignment = 32;
constexpr uint32_t kGgufMaxDims = 4;

struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  uint64_t ne[kGgufMaxDims] = {1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;   // from the start of the data section
  uint64_t n_bytes = 0;  // validated: offset + n_bytes lies inside the file
  const uint8_t* data = nullptr;

  uint64_t num_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;
};

class GgufFile {
 public:
  // Maps and parses a file.
  static Result<GgufFile> open(const std::string& path);
  // Parses bytes owned by the caller (they must outlive the GgufFile). Used by the fuzzer and tests.
  static Result<GgufFile> parse(const uint8_t* data, size_t size, std::string source_name = "<memory>");
  // A model presented as GGUF from another format (model/hf_folder.h): metadata and tensor infos whose data lives in
  // `mappings` (memory-mapped files) or `buffers` (bytes rearranged at load), both kept alive by the GgufFile.
  // Tensor names must be unique; the caller has validated every size.
  static GgufFile assemble(std::string source_name, std::vector<std::pair<std::string, GgufValue>> metadata,
                           std::vector<GgufTensorInfo> tensors, std::vector<std::shared_ptr<MappedFile>> mappings,
                           std::vector<std::shared_ptr<const std::vector<uint8_t>>> buffers);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& source_name() const { return source_name_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }

  // Typed getters: an Error names the key when it is missing or of the wrong kind.
  Result<std::string> get_string(const std::string& key) const;
  Result<uint64_t> get_uint(const std::string& key) const;  // any non-negative integer kind
  Result<double> get_float(const std::string& key) const;   // float or integer kinds
  Result<bool> get_bool(const std::string& key) const;
  Result<const GgufArray*> get_array(const std::string& key, GgufValueType elem_type) const;
  // Optional variants: nullopt when absent, Error when present with the wrong kind.
  Result<std::optional<uint64_t>> get_uint_opt(const std::string& key) const;
  Result<std::optional<double>> get_float_opt(const std::string& key) const;
  Result<std::optional<bool>> get_bool_opt(const std::string& key) const;
  Result<std::optional<std::string>> get_string_opt(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // MappedFile::release_pages when the file is mapped from a path; nothing for bytes held in memory.
  void release_pages(const uint8_t* p, size_t n) const {
    for (const auto& m : mappings_) m->release_pages(p, n);
  }

 private:
  std::vector<std::shared_ptr<MappedFile>> mappings_;  // keep the bytes alive when opened from a path
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> buffers_;  // assembled tensors' rearranged bytes
  std::string source_name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;

  friend class GgufParser;
};

}  // namespace pagoda
