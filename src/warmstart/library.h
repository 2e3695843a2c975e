// The warm-start library: earlier prompts' embeddings and summaries (never their full caches), searched exactly by
// cosine similarity, under a byte cap with least-recently-used eviction. Exact search is one dot product per entry;
// docs/warm-start.md measures where that stops being cheap (an approximate index would be the next step there).
#pragma once

#include <cstdint>
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

class WarmStartLibrary {
 public:
  explicit WarmStartLibrary(uint64_t byte_cap = 256ull << 20) : byte_cap_(byte_cap) {}

  // Adds an entry, then evicts the least recently used ones while over the cap (the new one is kept unless it
  // alone exceeds the cap; then it is refused and false returned).
  bool insert(LibraryEntry entry);

  struct Hit {
    int64_t index = -1;
    float similarity = 0;
  };
  // The most similar entry (ties: the oldest), or nullopt when empty. Marks it used.
  std::optional<Hit> nearest(const std::vector<float>& embedding);

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
};

}  // namespace pagoda::warmstart
