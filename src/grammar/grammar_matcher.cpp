#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <tuple>

namespace pagoda::grammar {

bool MatcherState::can_end() const {
  if (partial_left != 0) return false;
  for (const auto& s : stacks)
    if (s.empty()) return true;
  return false;
}

bool MatcherState::must_end() const {
  if (stacks.empty() || partial_left != 0) return false;
  for (const auto& s : stacks)
    if (!s.empty()) return false;
  return true;
}

std::string MatcherState::key() const {
  std::string k;
  k.reserve(8 + stacks.size() * 16);
  auto put = [&](uint32_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(partial);
  put(partial_left);
  put(partial_len);
  for (const auto& s : stacks) {
    put(static_cast<uint32_t>(s.size()));
    for (uint32_t p : s) put(p);
  }
  return k;
}

void GrammarMatcher::normalize(std::vector<std::vector<uint32_t>>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

void GrammarMatcher::expand(std::vector<uint32_t> stack, std::vector<std::vector<uint32_t>>& out,
                            bool& overflow) const {
  const auto& elems = g_->elems();
  for (;;) {
    if (out.size() >= kMaxStacks) {
      overflow = true;
      return;
    }
    if (stack.empty()) {
      out.push_back(std::move(stack));
      return;
    }
    const uint32_t p = stack.back();
    const Elem& e = elems[p];
    if (e.kind == Elem::Kind::kChars) {
      out.push_back(std::move(stack));
      return;
    }
    stack.pop_back();
    if (e.kind == Elem::Kind::kEnd) continue;  // the alternative is done: back to the parent's continuation
    // A rule reference: its continuation (unless it ends the alternative), then each alternative of the rule.
    if (elems[p + 1].kind != Elem::Kind::kEnd) stack.push_back(p + 1);
    const auto& alts = g_->alternatives(e.id);
    for (size_t i = 0; i + 1 < alts.size(); ++i) {
      std::vector<uint32_t> branch = stack;
      branch.push_back(alts[i]);
      expand(std::move(branch), out, overflow);
      if (overflow) return;
    }
    stack.push_back(alts.back());
  }
}

MatcherState GrammarMatcher::initial() const {
  MatcherState s;
  bool overflow = false;
  for (uint32_t a : g_->alternatives(g_->root())) expand({a}, s.stacks, overflow);
  normalize(s.stacks);
  if (overflow) {
    s.stacks.clear();
    s.overflow = true;
  }
  return s;
}

MatcherState GrammarMatcher::advance_code_point(const MatcherState& s, uint32_t cp) const {
  MatcherState next;
  bool overflow = false;
  const auto& elems = g_->elems();
  const auto& classes = g_->classes();
  for (const auto& stack : s.stacks) {
    if (stack.empty()) continue;
    const Elem& e = elems[stack.back()];
    if (!classes[e.id].contains(cp)) continue;
    std::vector<uint32_t> moved = stack;
    ++moved.back();
    expand(std::move(moved), next.stacks, overflow);
    if (overflow) break;
  }
  normalize(next.stacks);
  if (overflow) {
    next.stacks.clear();
    next.overflow = true;
  }
  return next;
}

bool GrammarMatcher::viable(const MatcherState& s, uint32_t lo, uint32_t hi) const {
  const auto& elems = g_->elems();
  const auto& classes = g_->classes();
  for (const auto& stack : s.stacks)
    if (!stack.empty() && classes[elems[stack.back()].id].intersects(lo, hi)) return true;
  return false;
}

namespace {

// The code points a UTF-8 sequence of `len` bytes may encode (shorter forms and values past U+10FFFF are not
// UTF-8); the surrogates inside the 3-byte range are excluded where a range is checked.
constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kMaxOfLength[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

// The valid code points a sequence of `len` bytes whose known high bits are `bits`, with `left` bytes to come, may
// still spell: [lo, hi], empty (lo > hi) when none.
std::pair<uint32_t, uint32_t> completions(uint32_t bits, uint8_t left, uint8_t len) {
  uint32_t lo = bits << (6 * left), hi = lo | ((1u << (6 * left)) - 1);
  lo = std::max(lo, kMinOfLength[len]);
  hi = std::min(hi, kMaxOfLength[len]);
  if (len == 3 && lo >= 0xD800 && hi <= 0xDFFF) return {1, 0};  // only surrogates left
  return {lo, hi};
}

}  // namespace

GrammarMatcher::Utf8Step GrammarMatcher::utf8_step(uint32_t bits, uint8_t left, uint8_t len, uint8_t byte) {
  Utf8Step st;
  if (left == 0) {
    if (byte < 0x80) {
      st.kind = Utf8Step::Kind::kCodePoint;
      st.code_point = byte;
      return st;
    }
    if ((byte & 0xE0) == 0xC0) {
      st.bits = byte & 0x1F;
      st.len = 2;
    } else if ((byte & 0xF0) == 0xE0) {
      st.bits = byte & 0x0F;
      st.len = 3;
    } else if ((byte & 0xF8) == 0xF0) {
      st.bits = byte & 0x07;
      st.len = 4;
    } else {
      return st;  // a continuation byte or an invalid lead byte where a character starts
    }
    st.left = static_cast<uint8_t>(st.len - 1);
    std::tie(st.lo, st.hi) = completions(st.bits, st.left, st.len);
    if (st.lo <= st.hi) st.kind = Utf8Step::Kind::kPending;
    return st;
  }
  if ((byte & 0xC0) != 0x80) return st;
  st.bits = (bits << 6) | (byte & 0x3F);
  st.left = static_cast<uint8_t>(left - 1);
  st.len = len;
  std::tie(st.lo, st.hi) = completions(st.bits, st.left, len);
  if (st.lo > st.hi) return st;
  if (st.left == 0) {
    if (st.bits >= 0xD800 && st.bits <= 0xDFFF) return st;
    st.kind = Utf8Step::Kind::kCodePoint;
    st.code_point = st.bits;
    st.bits = 0;
    st.len = 0;
    return st;
  }
  st.kind = Utf8Step::Kind::kPending;
  return st;
}

MatcherState GrammarMatcher::advance(const MatcherState& s, uint8_t byte) const {
  if (s.dead()) return s;
  const Utf8Step st = utf8_step(s.partial, s.partial_left, s.partial_len, byte);
  switch (st.kind) {
    case Utf8Step::Kind::kInvalid:
      return MatcherState{};
    case Utf8Step::Kind::kPending: {
      if (!viable(s, st.lo, st.hi)) return MatcherState{};
      MatcherState next = s;
      next.partial = st.bits;
      next.partial_left = st.left;
      next.partial_len = st.len;
      return next;
    }
    case Utf8Step::Kind::kCodePoint:
      break;
  }
  if (s.partial_left == 0) return advance_code_point(s, st.code_point);
  MatcherState whole = s;
  whole.partial = 0;
  whole.partial_left = 0;
  whole.partial_len = 0;
  return advance_code_point(whole, st.code_point);
}

MatcherState GrammarMatcher::advance(const MatcherState& s, std::string_view bytes) const {
  MatcherState cur = s;
  for (char c : bytes) {
    cur = advance(cur, static_cast<uint8_t>(c));
    if (cur.dead()) break;
  }
  return cur;
}

bool GrammarMatcher::accepts(std::string_view text) const { return advance(initial(), text).can_end(); }

}  // namespace pagoda::grammar
