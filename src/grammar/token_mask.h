// Token masks: which vocabulary tokens may come next in a grammar state.
//
// VocabTrie holds every token's bytes (the text the token adds, as llama.cpp's token_to_piece gives it) in a byte
// trie, built once per vocabulary. A mask walks the trie depth first from the state, advancing the matcher one byte
// per edge: a subtree whose prefix kills the state is skipped whole, so tokens sharing a prefix share the work
// (the idea behind XGrammar's and llguidance's token tries). Tokens without text (control tokens) are never allowed;
// the end-of-generation tokens are allowed exactly where the grammar can end.
//
// MaskCache remembers masks by grammar state. The states of a structured output repeat (inside a string, after a
// comma, ...), so after the first occurrences most steps are a lookup. A cache belongs to one compiled grammar and
// is shared by every request that uses it; it is bounded (entries and bytes) and thread-safe. A miss walks the
// trie through the grammar's StateAutomaton, so the matcher steps any earlier walk took are lookups.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/state_automaton.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::grammar {

// Control tokens that stand for text a tool-call format writes. Their piece is empty (control tokens print
// nothing), but for grammars they spell their text: a forced call may then use the model's own marker token, as
// the model was trained to, and the grammar moves past the marker either way.
inline constexpr std::string_view kTextControlTokens[] = {"[TOOL_CALLS]", "<tool_call>", "</tool_call>",
                                                          "<|python_tag|>", "<|python_start|>", "<|python_end|>"};
// The bytes token id spells for a grammar: its piece, or a listed control token's text.
std::string_view grammar_piece(const Tokenizer& tokenizer, int32_t id);

// One bit per token: bit (id % 64) of word (id / 64).
struct TokenMask {
  std::vector<uint64_t> words;
  bool allowed(int32_t id) const { return (words[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
  void allow(int32_t id) { words[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
  size_t count() const;
};

class VocabTrie {
 public:
  // The trie of a tokenizer's vocabulary, built on first use and shared (one per Tokenizer).
  static std::shared_ptr<const VocabTrie> of(const Tokenizer& tokenizer);
  explicit VocabTrie(const Tokenizer& tokenizer);

  int32_t n_vocab() const { return n_vocab_; }
  // A hash of the vocabulary's size and a sample of its pieces: tells a tokenizer at a reused address apart.
  static uint64_t fingerprint(const Tokenizer& tokenizer);
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }

  // The mask of tokens that may follow state s.
  TokenMask mask(const GrammarMatcher& m, const MatcherState& s) const;
  // The same mask, its matcher steps looked up in (and added to) an automaton of the grammar's states; nullopt
  // when the automaton outgrows its limit during the walk (then walk without it).
  std::optional<TokenMask> mask(StateAutomaton& a, const GrammarMatcher& m, const MatcherState& s) const;

 private:
  struct Node {
    uint32_t first_edge = 0, num_edges = 0;     // edges_[first_edge .. +num_edges), sorted by byte
    uint32_t first_token = 0, num_tokens = 0;   // tokens_[...]: tokens whose bytes end at this node
  };
  struct Edge {
    uint8_t byte;
    uint32_t child;
  };
  int32_t n_vocab_ = 0;
  uint64_t fingerprint_ = 0;
  std::vector<Node> nodes_;  // nodes_[0] is the root (the empty prefix)
  std::vector<Edge> edges_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> end_tokens_;  // end-of-generation tokens (EOS, EOT, ...)
};

class MaskCache {
 public:
  MaskCache(const GrammarMatcher& m, size_t max_entries = 4096) : automaton_(m), max_entries_(max_entries) {}
  // The cached mask of state s (a state of m, the matcher given at construction), computing it on a miss.
  std::shared_ptr<const TokenMask> get(const VocabTrie& trie, const GrammarMatcher& m, const MatcherState& s);
  // Whether the mask of s is cached (no computing, no change to hits, misses or recency).
  bool contains(const MatcherState& s) const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  TokenMask compute(const VocabTrie& trie, const GrammarMatcher& m, const MatcherState& s);

  std::mutex automaton_mu_;    // one walk at a time uses the automaton
  StateAutomaton automaton_;  // guarded by automaton_mu_
  mutable std::mutex mu_;
  size_t max_entries_;
  std::list<std::string> order_;  // most recently used first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const TokenMask>, std::list<std::string>::iterator>> map_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace pagoda::grammar
