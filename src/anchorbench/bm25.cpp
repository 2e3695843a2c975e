#include "anchorbench/bm25.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace pagoda::anchorbench {
namespace {

constexpr double kK1 = 1.2, kB = 0.75;

bool is_stop_word(const std::string& w) {
  static const std::unordered_set<std::string> kStop = {
      "a",  "an", "the", "is", "are", "am", "was", "be", "of", "to", "in", "on", "at", "and", "or", "do",
      "does", "did", "what", "which", "who", "where", "my", "i", "me", "it", "its", "for", "as", "by", "with"};
  return kStop.count(w) != 0;
}

}  // namespace

std::vector<std::string> Bm25Index::words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty() && !is_stop_word(cur)) out.push_back(cur);
    cur.clear();
  };
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      cur += static_cast<char>(c);
    else if (c >= 'A' && c <= 'Z')
      cur += static_cast<char>(c - 'A' + 'a');
    else
      flush();
  }
  flush();
  return out;
}

Bm25Index::Bm25Index(std::vector<std::string> documents) : documents_(std::move(documents)) {
  term_counts_.resize(documents_.size());
  lengths_.resize(documents_.size());
  double total = 0;
  for (size_t d = 0; d < documents_.size(); ++d) {
    const auto ws = words(documents_[d]);
    lengths_[d] = static_cast<int32_t>(ws.size());
    total += static_cast<double>(ws.size());
    for (const std::string& w : ws) ++term_counts_[d][w];
    for (const auto& [w, n] : term_counts_[d]) ++document_frequency_[w];
  }
  mean_length_ = documents_.empty() ? 0 : total / static_cast<double>(documents_.size());
}

std::vector<Bm25Index::Hit> Bm25Index::search(std::string_view query, int32_t k,
                                              const std::vector<uint8_t>& allowed) const {
  std::vector<std::string> terms = words(query);
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
  const double n_docs = static_cast<double>(documents_.size());
  std::vector<Hit> hits;
  for (size_t d = 0; d < documents_.size(); ++d) {
    if (!allowed.empty() && !allowed[d]) continue;
    double score = 0;
    bool any = false;
    for (const std::string& t : terms) {
      const auto it = term_counts_[d].find(t);
      if (it == term_counts_[d].end()) continue;
      any = true;
      const double n = document_frequency_.at(t);
      const double idf = std::log(1.0 + (n_docs - n + 0.5) / (n + 0.5));
      const double tf = it->second;
      score += idf * tf * (kK1 + 1) / (tf + kK1 * (1 - kB + kB * lengths_[d] / mean_length_));
    }
    if (any) hits.push_back({static_cast<int32_t>(d), score});
  }
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.score > b.score; });
  if (static_cast<int32_t>(hits.size()) > k) hits.resize(std::max(k, 0));
  return hits;
}

}  // namespace pagoda::anchorbench
