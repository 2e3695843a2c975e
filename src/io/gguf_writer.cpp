#include "io/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/gguf_file.h"

namespace pagoda {
namespace {

class ByteSink {
 public:
  template <typename T>
  void pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(size_t alignment) {
    while (out_.size() % alignment != 0) out_.push_back(0);
  }
  void bytes(const std::vector<uint8_t>& b) { out_.insert(out_.end(), b.begin(), b.end()); }
  std::vector<uint8_t>& data() { return out_; }

  void value(const GgufValue& v) {
    switch (v.type) {
      case GgufValueType::UINT8: pod<uint8_t>(static_cast<uint8_t>(std::get<uint64_t>(v.data))); break;
      case GgufValueType::INT8: pod<int8_t>(static_cast<int8_t>(std::get<int64_t>(v.data))); break;
      case GgufValueType::UINT16: pod<uint16_t>(static_cast<uint16_t>(std::get<uint64_t>(v.data))); break;
      case GgufValueType::INT16: pod<int16_t>(static_cast<int16_t>(std::get<int64_t>(v.data))); break;
      case GgufValueType::UINT32: pod<uint32_t>(static_cast<uint32_t>(std::get<uint64_t>(v.data))); break;
      case GgufValueType::INT32: pod<int32_t>(static_cast<int32_t>(std::get<int64_t>(v.data))); break;
      case GgufValueType::UINT64: pod<uint64_t>(std::get<uint64_t>(v.data)); break;
      case GgufValueType::INT64: pod<int64_t>(std::get<int64_t>(v.data)); break;
      case GgufValueType::FLOAT32: pod<float>(static_cast<float>(std::get<double>(v.data))); break;
      case GgufValueType::FLOAT64: pod<double>(std::get<double>(v.data)); break;
      case GgufValueType::BOOL: pod<uint8_t>(std::get<bool>(v.data) ? 1 : 0); break;
      case GgufValueType::STRING: str(std::get<std::string>(v.data)); break;
      case GgufValueType::ARRAY: {
        const auto& arr = *std::get<std::shared_ptr<GgufArray>>(v.data);
        pod<uint32_t>(static_cast<uint32_t>(arr.elem_type));
        pod<uint64_t>(arr.items.size());
        for (const auto& item : arr.items) value(item);
        break;
      }
    }
  }

 private:
  std::vector<uint8_t> out_;
};

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  if (key == "general.alignment") alignment_ = static_cast<uint32_t>(std::get<uint64_t>(value.data));
  for (auto& [k, v] : kv_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
  set(key, GgufValue{GgufValueType::STRING, v});
}
void GgufWriter::set_uint32(const std::string& key, uint32_t v) {
  set(key, GgufValue{GgufValueType::UINT32, uint64_t{v}});
}
void GgufWriter::set_float32(const std::string& key, float v) {
  set(key, GgufValue{GgufValueType::FLOAT32, double{v}});
}
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, GgufValue{GgufValueType::BOOL, v}); }

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne,
                            std::vector<uint8_t> bytes) {
  tensors_.push_back({name, type, std::move(ne), std::move(bytes)});
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  ByteSink s;
  s.pod<uint32_t>(kGgufMagic);
  s.pod<uint32_t>(3);
  s.pod<uint64_t>(tensors_.size());
  s.pod<uint64_t>(kv_.size());
  for (const auto& [k, v] : kv_) {
    s.str(k);
    s.pod<uint32_t>(static_cast<uint32_t>(v.type));
    s.value(v);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    s.str(t.name);
    s.pod<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) s.pod<uint64_t>(d);
    s.pod<uint32_t>(static_cast<uint32_t>(t.type));
    s.pod<uint64_t>(offset);
    offset += (t.bytes.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  s.pad_to(alignment_);
  for (const auto& t : tensors_) {
    s.bytes(t.bytes);
    s.pad_to(alignment_);
  }
  return std::move(s.data());
}

Status GgufWriter::write_file(const std::string& path) const {
  const std::vector<uint8_t> bytes = to_bytes();
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return make_error("cannot create '" + tmp + "': " + std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return make_error("cannot write '" + path + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return make_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  }
  return Status::success();
}

}  // namespace pagoda
