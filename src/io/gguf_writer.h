// GGUF writer (version 3): metadata of every value type and tensors, with data aligned to general.alignment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/ggml_type.h"
#include "io/gguf_value.h"
#include "util/result.h"

namespace pagoda {

class GgufWriter {
 public:
  void set(const std::string& key, GgufValue value);
  void set_string(const std::string& key, const std::string& v);
  void set_uint32(const std::string& key, uint32_t v);
  void set_float32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);

  // ne[0] is the contiguous dimension; bytes must hold exactly the tensor's data in `type`.
  void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne, std::vector<uint8_t> bytes);

  std::vector<uint8_t> to_bytes() const;
  Status write_file(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace pagoda
