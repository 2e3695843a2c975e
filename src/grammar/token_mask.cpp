#include "grammar/token_mask.h"

#include <algorithm>
#include <bit>
#include <map>

namespace pagoda::grammar {

std::string_view grammar_piece(const Tokenizer& tokenizer, int32_t id) {
  const std::string& piece = tokenizer.piece(id);
  if (!piece.empty()) return piece;
  const std::string& text = tokenizer.token_text(id);
  for (std::string_view marker : kTextControlTokens)
    if (text == marker) return marker;
  return piece;
}

size_t TokenMask::count() const {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

std::shared_ptr<const VocabTrie> VocabTrie::of(const Tokenizer& tokenizer) {
  static std::mutex mu;
  static std::map<const Tokenizer*, std::weak_ptr<const VocabTrie>> tries;
  std::lock_guard lock(mu);
  auto& slot = tries[&tokenizer];
  if (auto t = slot.lock(); t && t->fingerprint_ == fingerprint(tokenizer)) return t;
  auto t = std::make_shared<const VocabTrie>(tokenizer);
  slot = t;
  return t;
}

uint64_t VocabTrie::fingerprint(const Tokenizer& tokenizer) {
  uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(tokenizer.n_vocab());
  for (int32_t id = 0; id < tokenizer.n_vocab(); id += 97)
    for (char c : tokenizer.piece(id)) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

VocabTrie::VocabTrie(const Tokenizer& tokenizer) : n_vocab_(tokenizer.n_vocab()), fingerprint_(fingerprint(tokenizer)) {
  // Sort the tokens by their bytes, then lay the trie out breadth first so each node's edges are contiguous.
  std::vector<std::pair<std::string_view, int32_t>> pieces;
  for (int32_t id = 0; id < n_vocab_; ++id) {
    if (tokenizer.is_end_of_generation(id)) {
      end_tokens_.push_back(id);
      continue;
    }
    const std::string_view p = grammar_piece(tokenizer, id);
    if (!p.empty()) pieces.emplace_back(p, id);
  }
  std::sort(pieces.begin(), pieces.end());
  // Build with a temporary pointer trie (children by byte), then flatten.
  struct Tmp {
    std::map<uint8_t, uint32_t> kids;
    std::vector<int32_t> toks;
  };
  std::vector<Tmp> tmp(1);
  for (const auto& [bytes, id] : pieces) {
    uint32_t n = 0;
    for (char c : bytes) {
      const uint8_t b = static_cast<uint8_t>(c);
      auto it = tmp[n].kids.find(b);
      if (it == tmp[n].kids.end()) {
        tmp.emplace_back();
        it = tmp[n].kids.emplace(b, static_cast<uint32_t>(tmp.size() - 1)).first;
      }
      n = it->second;
    }
    tmp[n].toks.push_back(id);
  }
  nodes_.resize(tmp.size());
  for (size_t i = 0; i < tmp.size(); ++i) {
    Node& node = nodes_[i];
    node.first_edge = static_cast<uint32_t>(edges_.size());
    node.num_edges = static_cast<uint32_t>(tmp[i].kids.size());
    for (const auto& [b, child] : tmp[i].kids) edges_.push_back(Edge{b, child});
    node.first_token = static_cast<uint32_t>(tokens_.size());
    node.num_tokens = static_cast<uint32_t>(tmp[i].toks.size());
    tokens_.insert(tokens_.end(), tmp[i].toks.begin(), tmp[i].toks.end());
  }
}

TokenMask VocabTrie::mask(const GrammarMatcher& m, const MatcherState& s) const {
  TokenMask mask;
  mask.words.assign((static_cast<size_t>(n_vocab_) + 63) / 64, 0);
  if (s.dead()) return mask;
  if (s.can_end())
    for (int32_t id : end_tokens_) mask.allow(id);
  // Depth-first over the trie; each frame owns the state after its node's prefix.
  struct Frame {
    uint32_t node;
    uint32_t next_edge;
    MatcherState state;
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{0, 0, s});
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Node& node = nodes_[f.node];
    if (f.next_edge == node.num_edges) {
      stack.pop_back();
      continue;
    }
    const Edge& e = edges_[node.first_edge + f.next_edge++];
    MatcherState next = m.advance(f.state, e.byte);
    if (next.dead()) continue;
    const Node& child = nodes_[e.child];
    for (uint32_t i = 0; i < child.num_tokens; ++i) mask.allow(tokens_[child.first_token + i]);
    if (child.num_edges > 0) stack.push_back(Frame{e.child, 0, std::move(next)});
  }
  return mask;
}

std::optional<TokenMask> VocabTrie::mask(StateAutomaton& a, const GrammarMatcher& m, const MatcherState& s) const {
  TokenMask mask;
  mask.words.assign((static_cast<size_t>(n_vocab_) + 63) / 64, 0);
  if (s.dead()) return mask;
  if (s.can_end())
    for (int32_t id : end_tokens_) mask.allow(id);
  // As mask() above, with the state as a number in the automaton plus the unfinished UTF-8 sequence beside it.
  struct Frame {
    uint32_t node;
    uint32_t next_edge;
    uint32_t state;
    uint32_t bits;
    uint8_t left, len;
  };
  MatcherState stacks = s;
  stacks.partial = 0;
  stacks.partial_left = stacks.partial_len = 0;
  const auto start = a.id_of(stacks);
  if (!start) return std::nullopt;
  std::vector<Frame> stack;
  stack.push_back(Frame{0, 0, *start, s.partial, s.partial_left, s.partial_len});
  while (!stack.empty()) {
    Frame& f = stack.back();
    const Node& node = nodes_[f.node];
    if (f.next_edge == node.num_edges) {
      stack.pop_back();
      continue;
    }
    const Edge& e = edges_[node.first_edge + f.next_edge++];
    const auto st = GrammarMatcher::utf8_step(f.bits, f.left, f.len, e.byte);
    Frame next{e.child, 0, f.state, 0, 0, 0};
    if (st.kind == GrammarMatcher::Utf8Step::Kind::kInvalid) continue;
    if (st.kind == GrammarMatcher::Utf8Step::Kind::kPending) {
      if (!m.viable(a.state(f.state), st.lo, st.hi)) continue;
      next.bits = st.bits;
      next.left = st.left;
      next.len = st.len;
    } else {
      const auto n = a.next(f.state, st.code_point);
      if (!n) return std::nullopt;
      if (*n == StateAutomaton::kDead) continue;
      next.state = *n;
    }
    const Node& child = nodes_[e.child];
    for (uint32_t i = 0; i < child.num_tokens; ++i) mask.allow(tokens_[child.first_token + i]);
    if (child.num_edges > 0) stack.push_back(next);  // may move f: not used after
  }
  return mask;
}

std::shared_ptr<const TokenMask> MaskCache::get(const VocabTrie& trie, const GrammarMatcher& m,
                                                const MatcherState& s) {
  std::string key = s.key();
  {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      ++hits_;
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    ++misses_;
  }
  auto mask = std::make_shared<const TokenMask>(compute(trie, m, s));
  std::lock_guard lock(mu_);
  if (map_.count(key)) return mask;
  order_.push_front(key);
  map_.emplace(std::move(key), std::make_pair(mask, order_.begin()));
  while (map_.size() > max_entries_) {
    map_.erase(order_.back());
    order_.pop_back();
  }
  return mask;
}

TokenMask MaskCache::compute(const VocabTrie& trie, const GrammarMatcher& m, const MatcherState& s) {
  {
    std::lock_guard lock(automaton_mu_);
    automaton_.trim();
    if (auto mask = trie.mask(automaton_, m, s)) return std::move(*mask);
  }
  return trie.mask(m, s);  // one walk met more states than the automaton holds
}

bool MaskCache::contains(const MatcherState& s) const {
  const std::string key = s.key();
  std::lock_guard lock(mu_);
  return map_.count(key) != 0;
}

uint64_t MaskCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

uint64_t MaskCache::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace pagoda::grammar
