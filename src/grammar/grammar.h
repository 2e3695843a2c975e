// Grammar: a context-free grammar over Unicode code points, in the flat form the matcher walks.
//
// Every rule is a list of alternatives; an alternative is a run of elements ended by kEnd:
//   kChars  one code point from a character class (a literal character is a one-range class)
//   kRule   a reference to another rule
//   kEnd    the end of the alternative
// All alternatives of all rules live in one `elems` array, so a matcher position is one index into it.
// Repetition (x*, x+, x?, x{m,n}) is compiled into helper rules by the GBNF parser, with right recursion so that a
// repeated item never deepens the matcher's stacks (see grammar_matcher.h: the continuation of a rule reference
// that ends its alternative is not kept).
//
// GrammarBuilder checks what the matcher relies on: every referenced rule is defined, the root exists, no rule
// is left-recursive (a rule reachable from itself without consuming a character would make expansion loop), and
// the grammar stays under size limits (compile_limits below).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/result.h"

namespace pagoda::grammar {

// A set of code points: ranges [first, last], or everything outside them when negated.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // sorted, disjoint after finish()
  bool negated = false;

  bool contains(uint32_t c) const;
  // Whether some code point in [lo, hi] is in the set (for a partly read UTF-8 sequence).
  bool intersects(uint32_t lo, uint32_t hi) const;
  void finish();  // sorts and merges the ranges
};

struct Elem {
  enum class Kind : uint8_t { kEnd, kChars, kRule };
  Kind kind = Kind::kEnd;
  uint32_t id = 0;  // kChars: index into classes; kRule: rule index
};

// Limits that keep compiling and matching bounded for untrusted grammars and schemas.
struct GrammarLimits {
  size_t max_rules = 100'000;
  size_t max_elems = 2'000'000;
};

class Grammar {
 public:
  const std::vector<Elem>& elems() const { return elems_; }
  const std::vector<CharClass>& classes() const { return classes_; }
  // The first element of each alternative of rule r.
  const std::vector<uint32_t>& alternatives(uint32_t r) const { return alts_[r]; }
  uint32_t root() const { return root_; }
  size_t num_rules() const { return alts_.size(); }
  const std::string& rule_name(uint32_t r) const { return names_[r]; }

 private:
  friend class GrammarBuilder;
  std::vector<Elem> elems_;
  std::vector<CharClass> classes_;
  std::vector<std::vector<uint32_t>> alts_;
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

// One alternative while building: elements without the closing kEnd.
using Sequence = std::vector<Elem>;

class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {}) : limits_(limits) {}

  // The id of a rule by name, creating an undefined one on first use (references may come before definitions).
  uint32_t rule(const std::string& name);
  // A fresh rule named after `base` (base_1, base_2, ...), for repetition helpers.
  uint32_t fresh_rule(const std::string& base);
  bool defined(uint32_t r) const { return defined_[r]; }
  // Defines rule r; an error if it is already defined or the grammar grows past its limits.
  Status define(uint32_t r, std::vector<Sequence> alternatives);
  Elem chars(CharClass c);
  Elem literal_char(uint32_t c);
  static Elem ref(uint32_t r) { return Elem{Elem::Kind::kRule, r}; }

  // Checks the grammar (every referenced rule defined, no left recursion) and returns it with `root_name` as root.
  Result<std::shared_ptr<const Grammar>> build(const std::string& root_name);

 private:
  Status check_left_recursion() const;

  GrammarLimits limits_;
  Grammar g_;
  std::vector<bool> defined_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::unordered_map<uint32_t, uint32_t> literal_classes_;  // code point -> class id, shared
  size_t total_elems_ = 0;
};

}  // namespace pagoda::grammar
