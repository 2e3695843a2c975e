// How deeply a parsed JSON value nests, measured without recursion (nlohmann's parser is iterative, but dumping,
// comparing or walking a value recursively is not: a request body nested 100,000 deep must be refused before
// anything recurses over it).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace pagoda {

// Whether `value` nests deeper than `max_depth` (a scalar has depth 0, [] and {} depth 1).
template <typename Json>
bool json_nests_deeper_than(const Json& value, size_t max_depth) {
  std::vector<std::pair<const Json*, size_t>> todo{{&value, 0}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    if (depth + 1 > max_depth) return true;
    for (const auto& child : *v) todo.push_back({&child, depth + 1});
  }
  return false;
}

}  // namespace pagoda
