#include "warmstart/library.h"

#include <cstring>
#include <filesystem>

#include <hnswlib/hnswlib.h>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"

namespace pagoda::warmstart {

struct ApproximateIndex {
  explicit ApproximateIndex(size_t dim, size_t n) : space(dim), hnsw(&space, n, /*M=*/16, /*ef_construction=*/100) {
    // One layer (a navigable small-world graph): hnswlib 0.6.2's SIMD search reads the entry one past the end of an
    // upper layer's link list (its own allocation; AddressSanitizer reports it). Layer 0's lists sit inside one
    // large buffer, where that read stays in bounds. Without the hierarchy a search takes more hops from the
    // entry point; §5.4 of docs/warm-start.md measures what that costs.
    hnsw.mult_ = 0;
  }
  hnswlib::InnerProductSpace space;  // distance 1 - <a, b>: cosine for unit vectors
  hnswlib::HierarchicalNSW<float> hnsw;
};

WarmStartLibrary::WarmStartLibrary(uint64_t byte_cap) : byte_cap_(byte_cap) {}
WarmStartLibrary::~WarmStartLibrary() = default;
WarmStartLibrary::WarmStartLibrary(WarmStartLibrary&&) noexcept = default;
WarmStartLibrary& WarmStartLibrary::operator=(WarmStartLibrary&&) noexcept = default;

bool WarmStartLibrary::insert(LibraryEntry entry) {
  if (entry.bytes() > byte_cap_) return false;
  index_stale_ = true;
  bytes_ += entry.bytes();
  entries_.push_back(std::move(entry));
  last_used_.push_back(++clock_);
  while (bytes_ > byte_cap_) {
    size_t oldest = 0;
    for (size_t i = 1; i < entries_.size(); ++i)
      if (last_used_[i] < last_used_[oldest]) oldest = i;
    bytes_ -= entries_[oldest].bytes();
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));  // (the index is stale already)
    last_used_.erase(last_used_.begin() + static_cast<std::ptrdiff_t>(oldest));
    ++evictions_;
  }
  return true;
}

std::optional<WarmStartLibrary::Hit> WarmStartLibrary::nearest_exact(const std::vector<float>& embedding) const {
  Hit best;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i].embedding;
    if (e.size() != embedding.size()) continue;
    double s = 0;
    for (size_t c = 0; c < e.size(); ++c) s += static_cast<double>(e[c]) * embedding[c];
    if (best.index < 0 || s > best.similarity) {
      best.index = static_cast<int64_t>(i);
      best.similarity = static_cast<float>(s);
    }
  }
  if (best.index < 0) return std::nullopt;
  return best;
}

std::optional<WarmStartLibrary::Hit> WarmStartLibrary::nearest(const std::vector<float>& embedding) {
  if (entries_.empty()) return std::nullopt;
  std::optional<Hit> best;
  const size_t dim = entries_.front().embedding.size();
  if (uses_approximate_search() && embedding.size() == dim && dim > 0) {
    if (index_stale_) {
      index_ = std::make_unique<ApproximateIndex>(dim, entries_.size());
      for (size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].embedding.size() == dim) index_->hnsw.addPoint(entries_[i].embedding.data(), i);
      index_->hnsw.setEf(256);  // recall over speed: docs/warm-start.md §5.4
      index_stale_ = false;
    }
    auto top = index_->hnsw.searchKnn(embedding.data(), 1);
    if (!top.empty()) {
      const auto i = static_cast<int64_t>(top.top().second);
      double s = 0;  // the exact similarity of the entry found
      for (size_t c = 0; c < dim; ++c) s += static_cast<double>(entries_[i].embedding[c]) * embedding[c];
      best = Hit{i, static_cast<float>(s)};
    }
  } else {
    best = nearest_exact(embedding);
  }
  if (best) last_used_[best->index] = ++clock_;
  return best;
}

Status WarmStartLibrary::save(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error("warm-start library: cannot create " + dir + ": " + ec.message());
  std::vector<std::vector<float>> token_rows(entries_.size());
  std::vector<SafetensorsF32> tensors;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const LibraryEntry& e = entries_[i];
    token_rows[i].assign(e.tokens.begin(), e.tokens.end());
    const std::string p = "entry." + std::to_string(i) + ".";
    const SlotCache& s = e.summary;
    tensors.push_back({p + "tokens", {token_rows[i].size()}, token_rows[i]});
    tensors.push_back({p + "embedding", {e.embedding.size()}, e.embedding});
    tensors.push_back({p + "summary",
                       {uint64_t(s.n_layer), uint64_t(s.n_kv_heads), uint64_t(s.n_slots), uint64_t(s.row_width())},
                       s.rows});
  }
  return write_safetensors_f32(dir + "/library.safetensors", tensors,
                               {{"format", "pagoda-warmstart-library-1"}, {"entries", std::to_string(entries_.size())}});
}

Result<WarmStartLibrary> WarmStartLibrary::load(const std::string& dir, uint64_t byte_cap) {
  const std::string path = dir + "/library.safetensors";
  auto file = SafetensorsFile::open(path);
  if (!file.ok()) return make_error("warm-start library: " + file.error().message);
  return from_safetensors(*file, path, byte_cap);
}

Result<WarmStartLibrary> WarmStartLibrary::from_safetensors(const SafetensorsFile& file, const std::string& path,
                                                            uint64_t byte_cap) {
  auto fmt = file.metadata().find("format");
  if (fmt == file.metadata().end() || fmt->second != "pagoda-warmstart-library-1")
    return make_error("warm-start library: " + path + " is not a pagoda warm-start library");
  WarmStartLibrary lib(byte_cap);
  for (size_t i = 0;; ++i) {
    const std::string p = "entry." + std::to_string(i) + ".";
    const SafetensorsTensor* tok = file.find(p + "tokens");
    const SafetensorsTensor* emb = file.find(p + "embedding");
    const SafetensorsTensor* sum = file.find(p + "summary");
    if (tok == nullptr && emb == nullptr && sum == nullptr) break;
    if (tok == nullptr || emb == nullptr || sum == nullptr || tok->type != GgmlType::F32 ||
        emb->type != GgmlType::F32 || sum->type != GgmlType::F32 || tok->shape.size() != 1 ||
        emb->shape.size() != 1 || sum->shape.size() != 4 || sum->shape[3] % 2 != 1 || sum->shape[3] < 3)
      return make_error("warm-start library: " + path + ": entry " + std::to_string(i) + " is incomplete or malformed");
    LibraryEntry e;
    // (memcpy: the data of an untrusted file need not be 4-aligned)
    std::vector<float> t(tok->shape[0]);
    if (!t.empty()) std::memcpy(t.data(), tok->data, t.size() * 4);
    for (uint64_t k = 0; k < tok->shape[0]; ++k) {
      if (!(t[k] >= 0 && t[k] < 16777216.0f) || t[k] != static_cast<float>(static_cast<int32_t>(t[k])))
        return make_error("warm-start library: " + path + ": entry " + std::to_string(i) + " has a bad token id");
      e.tokens.push_back(static_cast<int32_t>(t[k]));
    }
    e.embedding.resize(emb->shape[0]);
    if (!e.embedding.empty()) std::memcpy(e.embedding.data(), emb->data, e.embedding.size() * 4);
    SlotCache& s = e.summary;
    s.n_layer = static_cast<int64_t>(sum->shape[0]);
    s.n_kv_heads = static_cast<int64_t>(sum->shape[1]);
    s.n_slots = static_cast<int64_t>(sum->shape[2]);
    s.head_dim = static_cast<int64_t>((sum->shape[3] - 1) / 2);
    s.rows.resize(sum->n_bytes / 4);
    if (!s.rows.empty()) std::memcpy(s.rows.data(), sum->data, sum->n_bytes);
    lib.insert(std::move(e));
  }
  return lib;
}

}  // namespace pagoda::warmstart
