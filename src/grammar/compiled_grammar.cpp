#include "grammar/compiled_grammar.h"

#include <list>
#include <mutex>
#include <unordered_map>

#include "grammar/gbnf_parser.h"

namespace pagoda::grammar {
namespace {

// Masks cost n_vocab / 8 bytes each: keep about 32 MiB of them per grammar.
size_t mask_cache_entries(int32_t n_vocab) {
  const size_t bytes = (static_cast<size_t>(n_vocab) + 63) / 64 * 8;
  return std::max<size_t>(64, (size_t{32} << 20) / std::max<size_t>(bytes, 1));
}

// The most recently compiled grammars, by (vocabulary, text).
constexpr size_t kCompiledCacheEntries = 64;

struct CompiledCache {
  std::mutex mu;
  std::list<std::string> order;  // most recent first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const CompiledGrammar>, std::list<std::string>::iterator>>
      map;
};

CompiledCache& compiled_cache() {
  static CompiledCache* c = new CompiledCache;
  return *c;
}

}  // namespace

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> trie)
    : matcher_(std::move(grammar)),
      trie_(std::move(trie)),
      cache_(std::make_shared<MaskCache>(matcher_, mask_cache_entries(trie_->n_vocab()))) {}

Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(std::string_view gbnf, const Tokenizer& tokenizer) {
  std::shared_ptr<const VocabTrie> trie = VocabTrie::of(tokenizer);
  // The trie in the key: cached grammars keep their trie alive, so its address names one vocabulary.
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(trie.get())) + "\n" + std::string(gbnf);
  CompiledCache& cache = compiled_cache();
  {
    std::lock_guard lock(cache.mu);
    auto it = cache.map.find(key);
    if (it != cache.map.end()) {
      cache.order.splice(cache.order.begin(), cache.order, it->second.second);
      return it->second.first;
    }
  }
  auto grammar = parse_gbnf(gbnf);
  if (!grammar.ok()) return grammar.error();
  auto compiled = std::make_shared<const CompiledGrammar>(*grammar, std::move(trie));
  if (compiled->matcher().initial().dead()) return make_error("grammar: it matches no text at all");
  std::lock_guard lock(cache.mu);
  if (!cache.map.count(key)) {
    cache.order.push_front(key);
    cache.map.emplace(std::move(key), std::make_pair(compiled, cache.order.begin()));
    while (cache.map.size() > kCompiledCacheEntries) {
      cache.map.erase(cache.order.back());
      cache.order.pop_back();
    }
  }
  return std::shared_ptr<const CompiledGrammar>(compiled);
}

}  // namespace pagoda::grammar
