#include "io/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace pagoda {
namespace {

constexpr uint32_t kMaxArrayNesting = 4;
// Every metadata array element becomes a GgufValue (~48 bytes): cap their total so that a small file cannot
// make the parser allocate many times its size. Real vocabularies have at most a few hundred thousand entries.
constexpr uint64_t kMaxMetadataElements = uint64_t{1} << 24;

}  // namespace

// Reads the header, metadata and tensor infos with a bounds-checked cursor.
class GgufParser {
 public:
  GgufParser(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  Status parse(GgufFile& out) {
    uint32_t magic = 0;
    if (!read_pod(magic)) return make_error("file is too small to be GGUF (" + std::to_string(size_) + " bytes)");
    if (magic != kGgufMagic) return make_error("not a GGUF file (bad magic)");
    if (!read_pod(out.version_)) return truncated("the version");
    if (out.version_ != 2 && out.version_ != 3)
      return make_error("unsupported GGUF version " + std::to_string(out.version_) + " (supported: 2, 3)");
    uint64_t n_tensors = 0, n_kv = 0;
    if (!read_pod(n_tensors)) return truncated("the tensor count");
    if (!read_pod(n_kv)) return truncated("the metadata count");
    // Each metadata entry takes at least 12 bytes (key length + type), each tensor info at least 24.
    if (n_kv > remaining() / 12)
      return make_error("metadata count " + std::to_string(n_kv) + " exceeds what the file can hold");
    if (n_tensors > remaining() / 24)
      return make_error("tensor count " + std::to_string(n_tensors) + " exceeds what the file can hold");

    out.kv_.reserve(n_kv);
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key;
      PAGODA_RETURN_IF_ERROR(read_string(key, "metadata key #" + std::to_string(i)));
      if (out.kv_index_.count(key)) return make_error("duplicate metadata key '" + key + "'");
      uint32_t type = 0;
      if (!read_pod(type)) return truncated("the type of metadata key '" + key + "'");
      GgufValue value;
      PAGODA_RETURN_IF_ERROR(read_value(type, value, key, 0));
      out.kv_index_[key] = out.kv_.size();
      out.kv_.emplace_back(std::move(key), std::move(value));
    }

    if (out.has("general.alignment")) {
      auto align = out.get_uint("general.alignment");
      if (!align.ok()) return align.error();
      const uint64_t v = *align;
      if (v == 0 || (v & (v - 1)) != 0 || v > (1u << 20))
        return make_error("general.alignment " + std::to_string(v) + " is not a power of two up to 1 MiB");
      out.alignment_ = static_cast<uint32_t>(v);
    }

    out.tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensorInfo info;
      PAGODA_RETURN_IF_ERROR(read_string(info.name, "tensor name #" + std::to_string(i)));
      const std::string what = "tensor '" + info.name + "'";
      if (out.tensor_index_.count(info.name)) return make_error("duplicate " + what);
      if (!read_pod(info.n_dims)) return truncated("the dimensions of " + what);
      if (info.n_dims == 0 || info.n_dims > kGgufMaxDims)
        return make_error(what + " has " + std::to_string(info.n_dims) + " dimensions (1 to 4 allowed)");
      uint64_t count = 1;
      for (uint32_t d = 0; d < info.n_dims; ++d) {
        if (!read_pod(info.ne[d])) return truncated("the shape of " + what);
        if (info.ne[d] == 0) return make_error(what + " has a zero-sized dimension");
        if (info.ne[d] > (uint64_t{1} << 40) || count > (uint64_t{1} << 50) / info.ne[d])
          return make_error(what + " has an impossibly large shape");
        count *= info.ne[d];
      }
      uint32_t type_id = 0;
      if (!read_pod(type_id)) return truncated("the type of " + what);
      auto traits = ggml_type_traits(type_id);
      if (!traits) return make_error(what + " has unknown tensor type " + std::to_string(type_id));
      info.type = traits->type;
      if (info.ne[0] % traits->block_elems != 0)
        return make_error(what + " has row length " + std::to_string(info.ne[0]) + ", not a multiple of the " +
                          traits->name + " block size " + std::to_string(traits->block_elems));
      info.n_bytes = count / traits->block_elems * traits->block_bytes;
      if (!read_pod(info.offset)) return truncated("the offset of " + what);
      if (info.offset % out.alignment_ != 0)
        return make_error(what + " offset " + std::to_string(info.offset) + " is not aligned to " +
                          std::to_string(out.alignment_));
      out.tensor_index_[info.name] = out.tensors_.size();
      out.tensors_.push_back(std::move(info));
    }

    // The data section starts at the next multiple of the alignment.
    uint64_t data_start = (pos_ + out.alignment_ - 1) / out.alignment_ * out.alignment_;
    if (!out.tensors_.empty() && data_start > size_) return make_error("file ends before its tensor data section");
    for (auto& t : out.tensors_) {
      uint64_t avail = size_ >= data_start ? size_ - data_start : 0;
      if (t.offset > avail || t.n_bytes > avail - t.offset)
        return make_error("tensor '" + t.name + "' extends past the end of the file");
      // Kernels read elements in place: the data must be aligned for its element type (the mapping is page-aligned).
      const uint64_t natural = t.type == GgmlType::F32 ? 4 : 2;
      if ((data_start + t.offset) % natural != 0)
        return make_error("tensor '" + t.name + "' data is not aligned to " + std::to_string(natural) + " bytes");
      t.data = data_ + data_start + t.offset;
    }
    // Tensors must not overlap (overlapping tensors would let a tiny file declare a huge model).
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(out.tensors_.size());
    for (const auto& t : out.tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i)
      if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->n_bytes)
        return make_error("tensor '" + by_offset[i]->name + "' overlaps tensor '" + by_offset[i - 1]->name + "'");
    return Status::success();
  }

 private:
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  bool read_pod(T& v) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  static Error truncated(const std::string& what) { return make_error("file is truncated in " + what); }

  Status read_string(std::string& s, const std::string& what) {
    uint64_t len = 0;
    if (!read_pod(len)) return truncated("the length of " + what);
    if (len > remaining())
      return make_error("string length of " + what + " (" + std::to_string(len) + ") exceeds the file");
    s.assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::success();
  }

  static uint64_t min_value_bytes(GgufValueType t) {
    switch (t) {
      case GgufValueType::UINT8:
      case GgufValueType::INT8:
      case GgufValueType::BOOL: return 1;
      case GgufValueType::UINT16:
      case GgufValueType::INT16: return 2;
      case GgufValueType::UINT32:
      case GgufValueType::INT32:
      case GgufValueType::FLOAT32: return 4;
      case GgufValueType::STRING:
      case GgufValueType::UINT64:
      case GgufValueType::INT64:
      case GgufValueType::FLOAT64: return 8;
      case GgufValueType::ARRAY: return 12;
    }
    return 1;
  }

  template <typename T, typename Wide>
  Status read_scalar(GgufValue& v, const std::string& key) {
    T x{};
    if (!read_pod(x)) return truncated("the value of metadata key '" + key + "'");
    v.data = static_cast<Wide>(x);
    return Status::success();
  }

  Status read_value(uint32_t type_id, GgufValue& v, const std::string& key, uint32_t depth) {
    if (!gguf_value_type_valid(type_id))
      return make_error("metadata key '" + key + "' has invalid value type " + std::to_string(type_id));
    v.type = static_cast<GgufValueType>(type_id);
    switch (v.type) {
      case GgufValueType::UINT8: return read_scalar<uint8_t, uint64_t>(v, key);
      case GgufValueType::INT8: return read_scalar<int8_t, int64_t>(v, key);
      case GgufValueType::UINT16: return read_scalar<uint16_t, uint64_t>(v, key);
      case GgufValueType::INT16: return read_scalar<int16_t, int64_t>(v, key);
      case GgufValueType::UINT32: return read_scalar<uint32_t, uint64_t>(v, key);
      case GgufValueType::INT32: return read_scalar<int32_t, int64_t>(v, key);
      case GgufValueType::UINT64: return read_scalar<uint64_t, uint64_t>(v, key);
      case GgufValueType::INT64: return read_scalar<int64_t, int64_t>(v, key);
      case GgufValueType::FLOAT32: return read_scalar<float, double>(v, key);
      case GgufValueType::FLOAT64: return read_scalar<double, double>(v, key);
      case GgufValueType::BOOL: {
        uint8_t b = 0;
        if (!read_pod(b)) return truncated("the value of metadata key '" + key + "'");
        if (b > 1) return make_error("metadata key '" + key + "' has invalid bool value " + std::to_string(b));
        v.data = b != 0;
        return Status::success();
      }
      case GgufValueType::STRING: {
        std::string s;
        PAGODA_RETURN_IF_ERROR(read_string(s, "the value of metadata key '" + key + "'"));
        v.data = std::move(s);
        return Status::success();
      }
      case GgufValueType::ARRAY: {
        if (depth >= kMaxArrayNesting) return make_error("metadata key '" + key + "' nests arrays too deeply");
        uint32_t elem = 0;
        uint64_t n = 0;
        if (!read_pod(elem) || !read_pod(n)) return truncated("the array header of metadata key '" + key + "'");
        if (!gguf_value_type_valid(elem))
          return make_error("metadata key '" + key + "' has invalid array element type " + std::to_string(elem));
        if (n > remaining() / min_value_bytes(static_cast<GgufValueType>(elem)))
          return make_error("array length of metadata key '" + key + "' (" + std::to_string(n) + ") exceeds the file");
        array_elements_ += n;
        if (array_elements_ > kMaxMetadataElements)
          return make_error("metadata arrays hold more than " + std::to_string(kMaxMetadataElements) +
                            " elements in total (at key '" + key + "')");
        auto arr = std::make_shared<GgufArray>();
        arr->elem_type = static_cast<GgufValueType>(elem);
        arr->items.resize(n);
        for (uint64_t i = 0; i < n; ++i) PAGODA_RETURN_IF_ERROR(read_value(elem, arr->items[i], key, depth + 1));
        v.data = std::move(arr);
        return Status::success();
      }
    }
    return make_error("metadata key '" + key + "' has invalid value type");
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t array_elements_ = 0;
};

std::string GgufTensorInfo::shape_string() const {
  std::string s = "[";
  for (uint32_t d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
  return s + "]";
}

Result<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, std::string source_name) {
  GgufFile file;
  file.source_name_ = std::move(source_name);
  GgufParser parser(data, size);
  Status st = parser.parse(file);
  if (!st.ok()) return make_error(file.source_name_ + ": " + st.error().message);
  return file;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  auto mapping = MappedFile::open(path);
  if (!mapping.ok()) return mapping.error();
  auto file = parse((*mapping)->data(), (*mapping)->size(), path);
  if (!file.ok()) return file.error();
  file->mappings_.push_back(std::move(*mapping));
  return file;
}

GgufFile GgufFile::assemble(std::string source_name, std::vector<std::pair<std::string, GgufValue>> metadata,
                            std::vector<GgufTensorInfo> tensors, std::vector<std::shared_ptr<MappedFile>> mappings,
                            std::vector<std::shared_ptr<const std::vector<uint8_t>>> buffers) {
  GgufFile file;
  file.source_name_ = std::move(source_name);
  file.version_ = 3;
  file.kv_ = std::move(metadata);
  for (size_t i = 0; i < file.kv_.size(); ++i) file.kv_index_[file.kv_[i].first] = i;
  file.tensors_ = std::move(tensors);
  for (size_t i = 0; i < file.tensors_.size(); ++i) file.tensor_index_[file.tensors_[i].name] = i;
  file.mappings_ = std::move(mappings);
  file.buffers_ = std::move(buffers);
  return file;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
Error missing(const std::string& key) { return make_error("metadata key '" + key + "' is missing"); }
Error wrong_kind(const std::string& key, const GgufValue& v, const char* want) {
  return make_error("metadata key '" + key + "' has type " + gguf_value_type_name(v.type) + ", expected " + want);
}
}  // namespace

Result<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (!v->is_string()) return wrong_kind(key, *v, "string");
  return std::get<std::string>(v->data);
}

Result<uint64_t> GgufFile::get_uint(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (auto* u = std::get_if<uint64_t>(&v->data); u && v->is_integer()) return *u;
  if (auto* i = std::get_if<int64_t>(&v->data)) {
    if (*i < 0) return make_error("metadata key '" + key + "' is negative (" + std::to_string(*i) + ")");
    return static_cast<uint64_t>(*i);
  }
  return wrong_kind(key, *v, "an integer");
}

Result<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (auto* d = std::get_if<double>(&v->data)) return *d;
  if (auto* u = std::get_if<uint64_t>(&v->data); u && v->is_integer()) return static_cast<double>(*u);
  if (auto* i = std::get_if<int64_t>(&v->data)) return static_cast<double>(*i);
  return wrong_kind(key, *v, "a number");
}

Result<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (auto* b = std::get_if<bool>(&v->data)) return *b;
  return wrong_kind(key, *v, "bool");
}

Result<const GgufArray*> GgufFile::get_array(const std::string& key, GgufValueType elem_type) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (!v->is_array()) return wrong_kind(key, *v, "array");
  const GgufArray* arr = std::get<std::shared_ptr<GgufArray>>(v->data).get();
  if (arr->elem_type != elem_type)
    return make_error("metadata key '" + key + "' is an array of " + gguf_value_type_name(arr->elem_type) +
                      ", expected " + gguf_value_type_name(elem_type));
  return arr;
}

template <typename T, typename Getter>
static Result<std::optional<T>> optional_get(const GgufFile& f, const std::string& key, Getter get) {
  if (!f.has(key)) return std::optional<T>{};
  auto r = get(key);
  if (!r.ok()) return r.error();
  return std::optional<T>(*r);
}

Result<std::optional<uint64_t>> GgufFile::get_uint_opt(const std::string& key) const {
  return optional_get<uint64_t>(*this, key, [this](const std::string& k) { return get_uint(k); });
}
Result<std::optional<double>> GgufFile::get_float_opt(const std::string& key) const {
  return optional_get<double>(*this, key, [this](const std::string& k) { return get_float(k); });
}
Result<std::optional<bool>> GgufFile::get_bool_opt(const std::string& key) const {
  return optional_get<bool>(*this, key, [this](const std::string& k) { return get_bool(k); });
}
Result<std::optional<std::string>> GgufFile::get_string_opt(const std::string& key) const {
  return optional_get<std::string>(*this, key, [this](const std::string& k) { return get_string(k); });
}

}  // namespace pagoda
