// GrammarMatcher: where generated text stands in a grammar, as a set of pushdown stacks, advanced byte by byte.
//
// A stack holds positions into Grammar::elems(), the top (back) being the next element to match, always a kChars
// element after expansion; an empty stack means the text so far is a complete sentence. A state holds every stack
// the text so far allows (the grammar may be ambiguous), sorted and without duplicates, plus the bytes of a UTF-8
// sequence that is not complete yet (tokens cut characters anywhere). A state with no stacks is dead: no
// continuation matches.
//
// Expanding a rule reference pushes the position after it only when that position is not the end of its
// alternative (a tail call), so right recursion, which the GBNF compiler uses for every repetition, keeps stacks
// flat however many items repeat.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "util/result.h"

namespace pagoda::grammar {

// At most this many stacks in one state: an ambiguous grammar that exceeds it fails instead of blowing up.
inline constexpr size_t kMaxStacks = 4096;

struct MatcherState {
  std::vector<std::vector<uint32_t>> stacks;
  uint32_t partial = 0;        // the code point bits read so far of an unfinished UTF-8 sequence
  uint8_t partial_left = 0;    // continuation bytes still expected (0: none pending)
  uint8_t partial_len = 0;     // the sequence's whole length (2 to 4) while one is pending
  bool overflow = false;       // the state exceeded kMaxStacks (then it is also dead)

  bool dead() const { return stacks.empty(); }
  // The text so far is a complete sentence of the grammar.
  bool can_end() const;
  // Nothing but the end is possible: every stack is empty.
  bool must_end() const;
  // A byte string identifying the state (for caches).
  std::string key() const;
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar) : g_(std::move(grammar)) {}

  const Grammar& grammar() const { return *g_; }
  MatcherState initial() const;
  // The state after one more byte (dead when the byte cannot continue the text).
  MatcherState advance(const MatcherState& s, uint8_t byte) const;
  // The state after a string of bytes (dead as soon as one byte fails).
  MatcherState advance(const MatcherState& s, std::string_view bytes) const;
  // Whether the grammar accepts the whole of `text` (tests and tools).
  bool accepts(std::string_view text) const;

  // The two halves of advance(), for walks that keep the stacks and the UTF-8 decoding apart (StateAutomaton):
  // the state after a whole code point (s has no unfinished sequence), and whether some stack's next class holds
  // a code point in [lo, hi].
  MatcherState advance_code_point(const MatcherState& s, uint32_t cp) const;
  bool viable(const MatcherState& s, uint32_t lo, uint32_t hi) const;

  // What one byte does to an unfinished UTF-8 sequence (partial bits, bytes left, length; left 0: none pending).
  struct Utf8Step {
    enum class Kind : uint8_t { kInvalid, kCodePoint, kPending };
    Kind kind = Kind::kInvalid;
    uint32_t code_point = 0;  // kCodePoint: the character just completed
    uint32_t bits = 0;        // kPending: the new partial state
    uint8_t left = 0, len = 0;
    uint32_t lo = 0, hi = 0;  // kPending: the code points the sequence may still become; a stack must allow one
  };
  static Utf8Step utf8_step(uint32_t bits, uint8_t left, uint8_t len, uint8_t byte);

 private:
  void expand(std::vector<uint32_t> stack, std::vector<std::vector<uint32_t>>& out, bool& overflow) const;
  static void normalize(std::vector<std::vector<uint32_t>>& stacks);

  std::shared_ptr<const Grammar> g_;
};

}  // namespace pagoda::grammar
