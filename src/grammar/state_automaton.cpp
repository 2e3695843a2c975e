#include "grammar/state_automaton.h"

#include <algorithm>

namespace pagoda::grammar {

StateAutomaton::StateAutomaton(const GrammarMatcher& m) : m_(m) {
  states_.emplace_back();  // kDead
  ascii_.assign(128, kDead);
  // A class (negated or not) changes membership only at its ranges' first code points and one past their last.
  for (const CharClass& c : m.grammar().classes())
    for (const auto& [first, last] : c.ranges) {
      if (first >= 128) boundaries_.push_back(first);
      if (last + 1 >= 128) boundaries_.push_back(last + 1);
    }
  std::sort(boundaries_.begin(), boundaries_.end());
  boundaries_.erase(std::unique(boundaries_.begin(), boundaries_.end()), boundaries_.end());
}

uint32_t StateAutomaton::interval_of(uint32_t cp) const {
  return static_cast<uint32_t>(std::upper_bound(boundaries_.begin(), boundaries_.end(), cp) - boundaries_.begin());
}

void StateAutomaton::trim() {
  if (states_.size() < kMaxStates && wide_.size() < kMaxWide) return;
  states_.resize(1);
  ids_.clear();
  ascii_.assign(128, kDead);
  wide_.clear();
}

std::optional<uint32_t> StateAutomaton::intern(MatcherState s) {
  if (s.dead()) return kDead;
  std::string key = s.key();
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  if (states_.size() >= 2 * kMaxStates) return std::nullopt;
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(std::move(s));
  ids_.emplace(std::move(key), id);
  ascii_.resize(ascii_.size() + 128, kUnknown);
  return id;
}

std::optional<uint32_t> StateAutomaton::id_of(const MatcherState& s) { return intern(s); }

std::optional<uint32_t> StateAutomaton::next(uint32_t id, uint32_t cp) {
  if (id == kDead) return kDead;
  if (cp < 128) {
    uint32_t& slot = ascii_[static_cast<size_t>(id) * 128 + cp];
    if (slot != kUnknown) return slot;
    auto n = intern(m_.advance_code_point(states_[id], cp));
    if (n) ascii_[static_cast<size_t>(id) * 128 + cp] = *n;  // ascii_ may have grown: index again
    return n;
  }
  const uint64_t key = (static_cast<uint64_t>(id) << 32) | interval_of(cp);
  auto it = wide_.find(key);
  if (it != wide_.end()) return it->second;
  if (wide_.size() >= 2 * kMaxWide) return std::nullopt;
  auto n = intern(m_.advance_code_point(states_[id], cp));
  if (n) wide_.emplace(key, *n);
  return n;
}

}  // namespace pagoda::grammar
