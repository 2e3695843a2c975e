#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace pagoda::grammar {
namespace {

GrammarMatcher matcher(const char* gbnf) {
  auto g = parse_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
  return GrammarMatcher(g.ok() ? *g : nullptr);
}

TEST(Gbnf, LiteralsClassesAndAlternatives) {
  const GrammarMatcher m = matcher(R"(root ::= "yes" | "no" | [0-9] [a-c]?)");
  for (const char* ok : {"yes", "no", "7", "7b"}) EXPECT_TRUE(m.accepts(ok)) << ok;
  for (const char* bad : {"", "ye", "yess", "x", "7d", "77"}) EXPECT_FALSE(m.accepts(bad)) << bad;
}

TEST(Gbnf, RepetitionOperators) {
  const GrammarMatcher m = matcher(
      "root ::= a b c d e\n"
      "a ::= \"a\"*\n"
      "b ::= \"b\"+\n"
      "c ::= \"c\"{2}\n"
      "d ::= \"d\"{1,3}\n"
      "e ::= \"e\"{2,} \"!\"\n");
  EXPECT_TRUE(m.accepts("bccdee!"));
  EXPECT_TRUE(m.accepts("aaabbbccdddeeeee!"));
  EXPECT_FALSE(m.accepts("accdee!"));      // b+ needs one
  EXPECT_FALSE(m.accepts("bcdee!"));       // c{2}
  EXPECT_FALSE(m.accepts("bccddddee!"));   // d{1,3}
  EXPECT_FALSE(m.accepts("bccde!"));       // e{2,}
}

TEST(Gbnf, GroupsCommentsEscapesAndNegatedClasses) {
  const GrammarMatcher m = matcher(
      "# a quoted string of anything but quotes, then a list\n"
      "root ::= \"\\\"\" [^\"\\n]* \"\\\"\" ( \",\" ws item )*   # trailing comment\n"
      "item ::= [a-z\\x41-\\x43]+\n"
      "ws ::= \" \"?\n");
  EXPECT_TRUE(m.accepts("\"hi there\""));
  EXPECT_TRUE(m.accepts("\"\",ab, CBA"));
  EXPECT_FALSE(m.accepts("\"a\nb\""));
  EXPECT_FALSE(m.accepts("\"x\",D"));
}

TEST(Gbnf, MultilineRulesAndUnicode) {
  const GrammarMatcher m = matcher(
      "root ::= (\n"
      "    \"é\" |\n"
      "    [α-ω]+\n"
      "  ) \"\\u00e9\"\n");
  EXPECT_TRUE(m.accepts("éé"));
  EXPECT_TRUE(m.accepts("αβγé"));
  EXPECT_FALSE(m.accepts("ée"));
}

TEST(Gbnf, PartialUtf8IsCheckedByteByByte) {
  const GrammarMatcher m = matcher("root ::= \"é\" | \"日本\"");
  const MatcherState s0 = m.initial();
  EXPECT_FALSE(m.advance(s0, uint8_t{0xC3}).dead());  // é starts C3 A9
  EXPECT_TRUE(m.advance(s0, uint8_t{0xC4}).dead());   // C4 xx is U+0100..U+013F: no such character here
  EXPECT_FALSE(m.advance(s0, uint8_t{0xE6}).dead());  // 日 is E6 97 A5
  EXPECT_TRUE(m.advance(s0, uint8_t{0x80}).dead());   // a continuation byte cannot start a character
  const MatcherState half = m.advance(s0, std::string_view("\xC3"));
  EXPECT_FALSE(half.can_end());
  EXPECT_TRUE(m.advance(half, std::string_view("\xA9")).can_end());
  EXPECT_TRUE(m.advance(half, std::string_view("a")).dead());
}

TEST(Gbnf, OnlyWellFormedUtf8Passes) {
  const GrammarMatcher m = matcher("root ::= [^\"]*");
  EXPECT_TRUE(m.accepts("{ \xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80 }"));
  EXPECT_FALSE(m.accepts("\xF0\x80\x81\xBB"));  // '{' spelled overlong in four bytes
  EXPECT_FALSE(m.accepts("\xC1\xBF"));            // overlong two-byte form
  EXPECT_FALSE(m.accepts("\xE0\x9F\xBF"));       // overlong three-byte form
  EXPECT_FALSE(m.accepts("\xED\xA0\x80"));       // a surrogate
  EXPECT_FALSE(m.accepts("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(m.accepts("\xF8\x88\x80\x80\x80"));
  // The overlong form dies at its second byte: no valid character starts F0 80.
  EXPECT_TRUE(m.advance(m.initial(), std::string_view("\xF0\x80")).dead());
  EXPECT_FALSE(m.advance(m.initial(), std::string_view("\xF0\x9F")).dead());
}

TEST(Gbnf, RightRecursionKeepsStacksFlat) {
  const GrammarMatcher m = matcher("root ::= [a]* \"b\"");
  MatcherState s = m.initial();
  size_t widest = 0;
  for (int i = 0; i < 10000; ++i) {
    s = m.advance(s, uint8_t{'a'});
    ASSERT_FALSE(s.dead());
    for (const auto& st : s.stacks) widest = std::max(widest, st.size());
  }
  EXPECT_LE(widest, 3u);
  EXPECT_TRUE(m.advance(s, uint8_t{'b'}).must_end());
}

TEST(Gbnf, NestingWithoutTailGrows) {
  // Balanced parentheses need a real stack: depth grows with the nesting, and closes again.
  const GrammarMatcher m = matcher("root ::= \"(\" root \")\" | \"x\"");
  EXPECT_TRUE(m.accepts("(((x)))"));
  EXPECT_FALSE(m.accepts("(((x))"));
  EXPECT_FALSE(m.accepts("((x)))"));
}

TEST(Gbnf, ErrorsNameTheProblemAndPlace) {
  struct Case {
    const char* text;
    const char* needle;
  };
  for (const Case& c : std::vector<Case>{
           {"root ::= \"abc", "unterminated string"},
           {"root ::= [a-", "unterminated character class"},
           {"root ::= x", "'x' is used but never defined"},
           {"start ::= \"a\"", "no 'root' rule"},
           {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
           {"root ::= root \"a\" | \"b\"", "left-recursive"},
           {"root ::= a\na ::= b? root\nb ::= \"x\"", "left-recursive"},
           {"root ::= \"a\"{3,2}", "max below min"},
           {"root ::= \"a\"{999999}", "repetition count above"},
           {"root ::= ( \"a\" ", "expected ')'"},
           {"root ::= \"\\q\"", "unknown escape"},
           {"root ::= [z-a]", "end before its start"},
           {"root ::= \"a\" b ::= \"c\"", "must start on its own line"},
           {"root = \"a\"", "expected '::='"},
           {"root ::= \"\\xZZ\"", "hex digits"},
           {"root ::= \"\xff\"", "invalid UTF-8"},
       }) {
    auto g = parse_gbnf(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(g.error().message.find(c.needle), std::string::npos) << c.text << " -> " << g.error().message;
  }
  auto g = parse_gbnf("root ::= \"a\"\n  | \"b\" )");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("line 2, column"), std::string::npos) << g.error().message;
}

TEST(Gbnf, HostileGrammarsFailFastWithBoundedMemory) {
  std::string deep = "root ::= ";
  for (int i = 0; i < 100000; ++i) deep += "(";
  auto g = parse_gbnf(deep);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("nest deeper"), std::string::npos);
  // Many bounded repetitions: the element budget stops the expansion.
  std::string wide = "root ::=";
  for (int i = 0; i < 100; ++i) wide += " [a-z]{0,9999}";
  auto big = parse_gbnf(wide);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("the grammar has more than"), std::string::npos) << big.error().message;
  EXPECT_FALSE(parse_gbnf(std::string(kMaxGbnfBytes + 1, ' ')).ok());
  // An exponentially ambiguous grammar overflows the stack budget instead of hanging: the state says so (a dead
  // state alone would also be what a byte the grammar refuses gives).
  auto amb = parse_gbnf("root ::= x x x x x x x x x x x x x x\nx ::= \"a\"? \"a\"? | \"a\"?");
  ASSERT_TRUE(amb.ok());
  GrammarMatcher m(*amb);
  MatcherState s = m.initial();
  for (int i = 0; i < 6 && !s.dead(); ++i) s = m.advance(s, uint8_t{'a'});
  EXPECT_TRUE(s.overflow) << "the stack budget (kMaxStacks = " << kMaxStacks << ") did not trip";
  EXPECT_TRUE(s.dead());
}

}  // namespace
}  // namespace pagoda::grammar
