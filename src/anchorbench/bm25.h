// Okapi BM25 over short texts (the memory task's rag baseline, anchorbench/memory_eval.h): words are the runs of
// ASCII letters and digits, lower-cased, with a short list of English stop words dropped; k1 = 1.2, b = 0.75, and
// idf = ln(1 + (N - n + 0.5) / (n + 0.5)) (Lucene's form, never negative).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pagoda::anchorbench {

class Bm25Index {
 public:
  explicit Bm25Index(std::vector<std::string> documents);

  struct Hit {
    int32_t document = -1;
    double score = 0;
  };
  // The k best documents for `query` among those `allowed` admits (all when empty; else one flag per document),
  // best first; ties go to the lower index. Documents that share no word with the query are not returned.
  std::vector<Hit> search(std::string_view query, int32_t k, const std::vector<uint8_t>& allowed = {}) const;

  const std::string& document(int32_t i) const { return documents_[i]; }
  int32_t size() const { return static_cast<int32_t>(documents_.size()); }

  // The words BM25 sees in a text, in order.
  static std::vector<std::string> words(std::string_view text);

 private:
  std::vector<std::string> documents_;
  std::vector<std::unordered_map<std::string, int32_t>> term_counts_;  // [documents] word -> count
  std::vector<int32_t> lengths_;                                        // [documents] words
  std::unordered_map<std::string, int32_t> document_frequency_;        // word -> documents holding it
  double mean_length_ = 0;
};

}  // namespace pagoda::anchorbench
