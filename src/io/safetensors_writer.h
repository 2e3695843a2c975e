// Writes F32 tensors as a safetensors file (the format io/safetensors.h reads): an 8-byte little-endian header
// length, the JSON header (dtype, shape, data_offsets per tensor, optional string metadata), then the data.
// Written atomically (util/atomic_file.h).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace pagoda {

struct SafetensorsF32 {
  std::string name;
  std::vector<uint64_t> shape;
  std::span<const float> data;  // product of shape elements
};

Status write_safetensors_f32(const std::string& path, const std::vector<SafetensorsF32>& tensors,
                             const std::map<std::string, std::string>& metadata);

}  // namespace pagoda
