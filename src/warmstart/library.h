// The warm-start library: earlier prompts' embeddings and summaries (never their full caches), searched by cosine
// similarity, under a byte cap with least-recently-used eviction. Search is exact (one dot product per entry) below
// `approximate_from` entries and an HNSW index (Debian's hnswlib) from there: docs/warm-start.md §5.4 measures
// exact search costing as much as the slot forward at about 10,000 entries of width 768. The index is rebuilt
// lazily, at the first search after the library changed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "util/result.h"
#include "warmstart/slot_cache.h"

namespace pagoda::warmstart {

struct LibraryEntry {
  std::vector<int32_t> tokens;   // the prompt, for the record and the baselines
  std::vector<float> embedding;  // [n_embd], unit length
  SlotCache summary;
  uint64_t bytes() const { return tokens.size() * 4 + embedding.size() * 4 + summary.bytes(); }
};

struct ApproximateIndex;  // library.cpp: hnswlib's HNSW over the entries' embeddings

constexpr int64_t kDefaultApproximateFrom = 10000;

class WarmStartLibrary {
 public:
  explicit WarmStartLibrary(uint64_t byte_cap = 256ull << 20);
  ~WarmStartLibrary();
  WarmStartLibrary(WarmStartLibrary&&) noexcept;
  WarmStartLibrary& operator=(WarmStartLibrary&&) noexcept;

  // Searches through the HNSW index once the library holds at least this many entries (0: always exact).
  void set_approximate_from(int64_t entries) { approximate_from_ = entries; }
  bool uses_approximate_search() const { return approximate_from_ > 0 && size() >= approximate_from_; }

  // Adds an entry, then evicts the least recently used ones while over the cap (the new one is kept unless it
  // alone exceeds the cap; then it is refused and false returned).
  bool insert(LibraryEntry entry);

  struct Hit {
    int64_t index = -1;
    float similarity = 0;
  };
  // The most similar entry (exact search: ties go to the oldest), or nullopt when empty. Marks it used.
  std::optional<Hit> nearest(const std::vector<float>& embedding);
  // Always the exact scan (the reference for the index's recall).
  std::optional<Hit> nearest_exact(const std::vector<float>& embedding) const;

  const LibraryEntry& entry(int64_t i) const { return entries_[i]; }
  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  uint64_t bytes() const { return bytes_; }
  uint64_t byte_cap() const { return byte_cap_; }
  uint64_t evictions() const { return evictions_; }

  // DIR/library.safetensors: per entry, its tokens (F32, exact below 2^24), embedding and summary.
  Status save(const std::string& dir) const;
  static Result<WarmStartLibrary> load(const std::string& dir, uint64_t byte_cap);
  // The same checks on an already parsed file (untrusted: every entry's tensors, shapes and token ids).
  static Result<WarmStartLibrary> from_safetensors(const SafetensorsFile& file, const std::string& name,
                                                   uint64_t byte_cap);

 private:
  uint64_t byte_cap_;
  uint64_t bytes_ = 0;
  uint64_t clock_ = 0;
  uint64_t evictions_ = 0;
  std::vector<LibraryEntry> entries_;
  std::vector<uint64_t> last_used_;
  int64_t approximate_from_ = kDefaultApproximateFrom;
  std::unique_ptr<ApproximateIndex> index_;  // null or stale after a change: rebuilt at the next search
  bool index_stale_ = true;
};

}  // namespace pagoda::warmstart
