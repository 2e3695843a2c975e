// Safetensors reader: an 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype, shape
// and [begin, end) byte range in the data section that follows, then the data. The file is memory-mapped and
// nothing is copied. The header is untrusted input: its size is capped, it must be a flat JSON object, every entry
// is type-checked, every range must lie inside the data section, match dtype x shape exactly (overflow-checked) and
// not overlap another; an Error names the tensor and the problem. Only the dtypes pagoda computes with are
// accepted (F32, F16, BF16); any other names itself in the error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "util/mapped_file.h"
#include "util/result.h"

namespace pagoda {

constexpr uint64_t kSafetensorsMaxHeaderBytes = 100ull << 20;  // the format's own limit (100 MB)
constexpr size_t kSafetensorsMaxDims = 4;

struct SafetensorsTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> shape;  // as stored: outermost first (PyTorch order), e.g. [out_features, in_features]
  const uint8_t* data = nullptr;
  uint64_t n_bytes = 0;
};

class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);
  // Parses bytes owned by the caller (they must outlive the object). For the fuzzer and tests.
  static Result<SafetensorsFile> parse(const uint8_t* data, size_t size, std::string source_name = "<memory>");

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& source_name() const { return source_name_; }
  const std::shared_ptr<MappedFile>& mapping() const { return mapping_; }

 private:
  static Result<SafetensorsFile> parse_unchecked(SafetensorsFile file, const uint8_t* data, size_t size);

  std::shared_ptr<MappedFile> mapping_;
  std::string source_name_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace pagoda
