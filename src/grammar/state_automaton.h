// StateAutomaton: a grammar's states, numbered as walks meet them, and the transitions between them by code point,
// remembered: a deterministic automaton built lazily over the pushdown matcher (the idea of llguidance's lexer and
// of XGrammar's cached state transitions).
//
// A mask walks the vocabulary trie (token_mask.h) advancing the matcher at every node: hundreds of thousands of
// steps for a state inside a string, each copying and re-expanding stacks. Most of those steps repeat ones taken
// before, in this walk or an earlier one (from any request using the grammar): inside a string, any ordinary
// character leads to the same few states. Here a step taken once is a table lookup after: ASCII by a dense table
// per state, other code points by a hash map keyed by the code point's interval. The grammar's character classes
// cut the code points into intervals whose members belong to the same classes, so every member of an interval
// moves every state alike: inside a JSON string all 1.1 million non-ASCII code points are one interval and one
// transition per state, not one per character met. Unfinished UTF-8 sequences are not states of their own (a 3-byte
// character has 1,024 two-byte prefixes); the walk carries the partial bits beside the state's number and asks
// the matcher whether some stack can still take the character.
//
// Memory is bounded: when the table holds kMaxStates states (or kMaxWide wide transitions), it is emptied before
// the next walk; a single walk that would outgrow it twice over gives up, and the caller walks without it.
// Not thread-safe: the owner serializes walks (MaskCache holds its lock around a walk).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_matcher.h"

namespace pagoda::grammar {

class StateAutomaton {
 public:
  static constexpr uint32_t kDead = 0;
  static constexpr size_t kMaxStates = 16384;     // 8 MiB of ASCII transitions
  static constexpr size_t kMaxWide = 1u << 19;     // non-ASCII transitions kept

  explicit StateAutomaton(const GrammarMatcher& m);

  // Empties the table if it is full (call between walks: numbers handed out before are invalid after).
  void trim();
  // The number of state s, which must have no unfinished UTF-8 sequence; nullopt when the table is over its limit.
  std::optional<uint32_t> id_of(const MatcherState& s);
  // The number of the state after code point cp from state `id` (kDead when it dies); nullopt when over the limit.
  std::optional<uint32_t> next(uint32_t id, uint32_t cp);
  const MatcherState& state(uint32_t id) const { return states_[id]; }
  size_t num_states() const { return states_.size(); }

 private:
  static constexpr uint32_t kUnknown = 0xFFFFFFFFu;
  std::optional<uint32_t> intern(MatcherState s);
  // The interval of code point cp (>= 128): the number of class boundaries at or below it.
  uint32_t interval_of(uint32_t cp) const;

  const GrammarMatcher& m_;
  std::vector<MatcherState> states_;               // states_[0] is the dead state
  std::unordered_map<std::string, uint32_t> ids_;  // by MatcherState::key()
  std::vector<uint32_t> ascii_;                    // [num_states][128]: next state, or kUnknown
  std::unordered_map<uint64_t, uint32_t> wide_;    // (id << 32 | interval) -> next state, for cp >= 128
  std::vector<uint32_t> boundaries_;               // sorted: code points >= 128 where some class starts or stops
};

}  // namespace pagoda::grammar
