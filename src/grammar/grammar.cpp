#include "grammar/grammar.h"

#include <algorithm>

namespace pagoda::grammar {

bool CharClass::contains(uint32_t c) const {
  // ranges are sorted and disjoint: binary search for the last range starting at or before c.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), c,
                             [](uint32_t v, const std::pair<uint32_t, uint32_t>& r) { return v < r.first; });
  const bool in = it != ranges.begin() && c <= std::prev(it)->second;
  return in != negated;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges)
      if (a <= hi && lo <= b) return true;
    return false;
  }
  // Negated: some code point of [lo, hi] escapes every range.
  uint32_t next = lo;
  for (const auto& [a, b] : ranges) {
    if (b < next) continue;
    if (a > next) return true;  // next is not covered
    if (b >= hi) return false;
    next = b + 1;
  }
  return next <= hi;
}

void CharClass::finish() {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges = std::move(merged);
}

uint32_t GrammarBuilder::rule(const std::string& name) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(g_.alts_.size());
  g_.alts_.emplace_back();
  g_.names_.push_back(name);
  defined_.push_back(false);
  by_name_.emplace(name, id);
  return id;
}

uint32_t GrammarBuilder::fresh_rule(const std::string& base) {
  for (size_t i = g_.alts_.size();; ++i) {
    const std::string name = base + "_" + std::to_string(i);
    if (!by_name_.count(name)) return rule(name);
  }
}

Status GrammarBuilder::define(uint32_t r, std::vector<Sequence> alternatives) {
  if (defined_[r]) return make_error("rule '" + g_.names_[r] + "' is defined twice");
  if (g_.alts_.size() > limits_.max_rules)
    return make_error("the grammar has more than " + std::to_string(limits_.max_rules) + " rules");
  for (const Sequence& s : alternatives) total_elems_ += s.size() + 1;
  if (total_elems_ > limits_.max_elems)
    return make_error("the grammar has more than " + std::to_string(limits_.max_elems) + " elements");
  defined_[r] = true;
  for (Sequence& s : alternatives) {
    g_.alts_[r].push_back(static_cast<uint32_t>(g_.elems_.size()));
    g_.elems_.insert(g_.elems_.end(), s.begin(), s.end());
    g_.elems_.push_back(Elem{Elem::Kind::kEnd, 0});
  }
  return Status::success();
}

Elem GrammarBuilder::chars(CharClass c) {
  c.finish();
  if (!c.negated && c.ranges.size() == 1 && c.ranges[0].first == c.ranges[0].second)
    return literal_char(c.ranges[0].first);
  g_.classes_.push_back(std::move(c));
  return Elem{Elem::Kind::kChars, static_cast<uint32_t>(g_.classes_.size() - 1)};
}

Elem GrammarBuilder::literal_char(uint32_t c) {
  auto it = literal_classes_.find(c);
  if (it == literal_classes_.end()) {
    CharClass cls;
    cls.ranges.push_back({c, c});
    g_.classes_.push_back(std::move(cls));
    it = literal_classes_.emplace(c, static_cast<uint32_t>(g_.classes_.size() - 1)).first;
  }
  return Elem{Elem::Kind::kChars, it->second};
}

Status GrammarBuilder::check_left_recursion() const {
  // nullable[r]: rule r can match the empty string (fixed point).
  const size_t n = g_.alts_.size();
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (uint32_t a : g_.alts_[r]) {
        bool all = true;
        for (uint32_t p = a; g_.elems_[p].kind != Elem::Kind::kEnd; ++p)
          if (g_.elems_[p].kind == Elem::Kind::kChars || !nullable[g_.elems_[p].id]) {
            all = false;
            break;
          }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // first[r]: the rules r can expand into before consuming a character. A cycle there is left recursion.
  std::vector<std::vector<uint32_t>> first(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t a : g_.alts_[r])
      for (uint32_t p = a; g_.elems_[p].kind == Elem::Kind::kRule; ++p) {
        first[r].push_back(g_.elems_[p].id);
        if (!nullable[g_.elems_[p].id]) break;
      }
  // Iterative DFS with colours: 0 unvisited, 1 on the path, 2 done.
  std::vector<uint8_t> colour(n, 0);
  for (size_t start = 0; start < n; ++start) {
    if (colour[start]) continue;
    std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(start), 0}};
    colour[start] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == first[r].size()) {
        colour[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t next = first[r][i++];
      if (colour[next] == 1) return make_error("rule '" + g_.names_[next] + "' is left-recursive");
      if (colour[next] == 0) {
        colour[next] = 1;
        path.push_back({next, 0});
      }
    }
  }
  return Status::success();
}

Result<std::shared_ptr<const Grammar>> GrammarBuilder::build(const std::string& root_name) {
  auto it = by_name_.find(root_name);
  if (it == by_name_.end() || !defined_[it->second]) return make_error("the grammar has no '" + root_name + "' rule");
  for (size_t r = 0; r < defined_.size(); ++r)
    if (!defined_[r]) return make_error("rule '" + g_.names_[r] + "' is used but never defined");
  PAGODA_RETURN_IF_ERROR(check_left_recursion());
  g_.root_ = it->second;
  return std::shared_ptr<const Grammar>(std::make_shared<Grammar>(std::move(g_)));
}

}  // namespace pagoda::grammar
