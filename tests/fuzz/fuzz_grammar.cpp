// libFuzzer target: untrusted GBNF grammars (the `grammar` request field) through the parser and the matcher.
// The input is split at the first NUL byte: the grammar text, then bytes fed to the matcher one at a time.
// Parsing may fail and the matcher may die, but nothing may crash, hang, leak or trip the sanitizers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  pagoda::grammar::GrammarLimits limits;
  limits.max_rules = 20'000;
  limits.max_elems = 200'000;
  auto g = pagoda::grammar::parse_gbnf(input.substr(0, nul), "root", limits);
  if (!g.ok()) return 0;
  pagoda::grammar::GrammarMatcher m(*g);
  pagoda::grammar::MatcherState s = m.initial();
  if (nul == std::string_view::npos) return 0;
  const std::string_view text = input.substr(nul + 1, 256);
  for (char c : text) {
    s = m.advance(s, static_cast<uint8_t>(c));
    (void)s.can_end();
    (void)s.must_end();
    (void)s.key();
    if (s.dead()) break;
  }
  return 0;
}
