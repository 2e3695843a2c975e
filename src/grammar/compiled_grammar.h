// CompiledGrammar: what constrained decoding needs for one grammar and one vocabulary, compiled once and shared by
// every request that asks for the same constraint: the grammar's matcher, the vocabulary trie and the cache of
// token masks by grammar state.
//
// compile_grammar() keeps recently compiled grammars (by source text and vocabulary), so a schema sent with every
// request is parsed and converted once and its mask cache stays warm across requests.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "grammar/grammar_matcher.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> trie);
  CompiledGrammar(const CompiledGrammar&) = delete;  // the mask cache's automaton refers to matcher_
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const GrammarMatcher& matcher() const { return matcher_; }
  const VocabTrie& trie() const { return *trie_; }
  // The tokens allowed after state s (cached).
  std::shared_ptr<const TokenMask> mask(const MatcherState& s) const { return cache_->get(*trie_, matcher_, s); }
  // Whether mask(s) would be a cache hit now.
  bool has_mask(const MatcherState& s) const { return cache_->contains(s); }
  const MaskCache& cache() const { return *cache_; }

 private:
  GrammarMatcher matcher_;
  std::shared_ptr<const VocabTrie> trie_;
  std::shared_ptr<MaskCache> cache_;
};

// The compiled form of GBNF text for `tokenizer`'s vocabulary; an Error names the grammar's problem.
Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(std::string_view gbnf, const Tokenizer& tokenizer);

}  // namespace pagoda::grammar
