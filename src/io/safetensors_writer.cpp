#include "io/safetensors_writer.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "util/atomic_file.h"

namespace pagoda {

Status write_safetensors_f32(const std::string& path, const std::vector<SafetensorsF32>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t n = 1;
    for (uint64_t dim : t.shape) n *= dim;
    if (n != t.data.size()) return make_error("safetensors writer: tensor '" + t.name + "' has the wrong size");
    if (t.name.empty() || t.name == "__metadata__" || header.contains(t.name))
      return make_error("safetensors writer: bad or repeated tensor name '" + t.name + "'");
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + n * 4}}};
    offset += n * 4;
  }
  std::string json = header.dump();
  while (json.size() % 8 != 0) json += ' ';  // the data section starts 8-aligned
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += json;
  const size_t data_begin = out.size();
  out.resize(data_begin + offset);
  size_t at = data_begin;
  for (const auto& t : tensors) {
    std::memcpy(out.data() + at, t.data.data(), t.data.size() * 4);  // little-endian x86
    at += t.data.size() * 4;
  }
  return write_file_atomically(path, out);
}

}  // namespace pagoda
