// The automaton-backed mask walk equals the plain trie walk (VocabTrie::mask with the matcher alone), state for
// state, on real vocabularies: two sizes, SentencePiece and byte-level pieces (which end inside UTF-8 sequences),
// grammars with strings, counted repetition and classes that cut the non-ASCII code points into intervals.
#include "grammar/state_automaton.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "io/gguf_file.h"
#include "util/rng.h"

namespace pagoda::grammar {
namespace {

const std::string kShared = PAGODA_SHARED_DIR;

std::unique_ptr<Tokenizer> load_vocab(const std::string& name) {
  auto f = GgufFile::open(kShared + "/vocab/" + name);
  EXPECT_TRUE(f.ok()) << name;
  auto t = Tokenizer::from_gguf(*f);
  EXPECT_TRUE(t.ok()) << name;
  return std::move(*t);
}

std::string schema_gbnf(const char* schema) {
  auto g = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
  EXPECT_TRUE(g.ok());
  return g.ok() ? *g : "";
}

std::vector<std::string> grammars() {
  return {
      json_object_gbnf(),
      schema_gbnf(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
          "n": {"type": "integer", "minimum": -50, "maximum": 900}, "x": {"type": "number"},
          "tags": {"type": "array", "items": {"enum": ["a", "béta", "ガンマ"]}, "maxItems": 3}},
          "required": ["name", "n", "x", "tags"], "additionalProperties": false})"),
      // Classes that start and stop inside each UTF-8 length, and a negated one.
      "root ::= ( [\\u00e0-\\u00ff\\u4e00-\\u9fff]+ \"\\u3002\" | [^\\x00-\\x7f\\u0400-\\u04ff]{1,3} [a-c] | "
      "[\\U0001F600-\\U0001F64F] \" \" )+\n",
  };
}

TokenMask plain_mask(const CompiledGrammar& g, const MatcherState& s) { return g.trie().mask(g.matcher(), s); }

// Random walks through each grammar, a random allowed token at a time; at every state the automaton's mask (one
// automaton per grammar, kept across walks, as the mask cache keeps it) must equal the plain walk's.
void check_walks(const Tokenizer& tok, int walks, int steps, uint64_t seed, int* partial_states) {
  Rng rng(seed);
  for (const std::string& text : grammars()) {
    auto g = compile_grammar(text, tok);
    ASSERT_TRUE(g.ok()) << text << ": " << g.error().message;
    const CompiledGrammar& cg = **g;
    StateAutomaton a(cg.matcher());
    for (int w = 0; w < walks; ++w) {
      MatcherState s = cg.matcher().initial();
      for (int i = 0; i < steps && !s.dead() && !s.must_end(); ++i) {
        const TokenMask want = plain_mask(cg, s);
        a.trim();
        const auto got = cg.trie().mask(a, cg.matcher(), s);
        ASSERT_TRUE(got.has_value());
        ASSERT_EQ(got->words, want.words) << text << " walk " << w << " step " << i;
        if (s.partial_left != 0) ++*partial_states;
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < tok.n_vocab(); ++id)
          if (want.allowed(id) && !tok.piece(id).empty()) ids.push_back(id);
        if (ids.empty()) break;
        s = cg.matcher().advance(s, tok.piece(ids[rng.next_u64() % ids.size()]));
        ASSERT_FALSE(s.dead());
      }
    }
  }
}

TEST(StateAutomaton, MasksEqualThePlainWalkOnLlamaSpm) {
  auto tok = load_vocab("ggml-vocab-llama-spm.gguf");
  int partial = 0;
  check_walks(*tok, 3, 25, 1, &partial);
}

TEST(StateAutomaton, MasksEqualThePlainWalkOnQwen2IncludingUnfinishedCharacters) {
  auto tok = load_vocab("ggml-vocab-qwen2.gguf");
  int partial = 0;
  check_walks(*tok, 1, 8, 2, &partial);
  // States inside a character, entered by a byte token: the walk starts from the partial bits.
  auto g = compile_grammar(grammars()[2], *tok);
  ASSERT_TRUE(g.ok());
  const CompiledGrammar& cg = **g;
  StateAutomaton a(cg.matcher());
  for (const char* prefix : {"\xe4", "\xe4\xb8", "\xc3", "\xf0\x9f", "\xf0\x9f\x98", "\xd0"}) {
    const MatcherState s = cg.matcher().advance(cg.matcher().initial(), prefix);
    if (std::string_view(prefix) == "\xd0") {  // U+0400..U+04FF only: Cyrillic is excluded everywhere
      EXPECT_TRUE(s.dead());
      continue;
    }
    ASSERT_FALSE(s.dead()) << prefix;
    ASSERT_NE(s.partial_left, 0);
    ++partial;
    const auto got = cg.trie().mask(a, cg.matcher(), s);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->words, plain_mask(cg, s).words) << prefix;
    EXPECT_GT(got->count(), 0u) << prefix;
  }
  EXPECT_GE(partial, 5);
}

TEST(StateAutomaton, WideCodePointsMoveLikeTheMatcherWithinTheirInterval) {
  auto g = parse_gbnf(grammars()[2]);
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  StateAutomaton a(m);
  Rng rng(3);
  std::vector<MatcherState> states = {m.initial(), m.advance(m.initial(), "\xc3\xa9"),
                                      m.advance(m.initial(), "\xe4\xb8\x80\xe4\xb8\x80"),
                                      m.advance(m.initial(), "\xce\xb1\xce\xb2")};
  int checked = 0;
  for (const MatcherState& s : states) {
    ASSERT_FALSE(s.dead());
    const auto id = a.id_of(s);
    ASSERT_TRUE(id.has_value());
    for (int k = 0; k < 400; ++k) {
      // Half near the classes' edges, half anywhere.
      static const uint32_t edges[] = {0x80, 0xdf, 0xe0, 0xff, 0x100, 0x3ff, 0x400, 0x4ff, 0x500, 0x3002,
                                       0x4dff, 0x4e00, 0x9fff, 0xa000, 0x1f5ff, 0x1f600, 0x1f64f, 0x1f650};
      uint32_t cp = k % 2 ? static_cast<uint32_t>(128 + rng.next_u64() % (0x10FFFF - 127))
                          : edges[rng.next_u64() % std::size(edges)] + static_cast<uint32_t>(rng.next_u64() % 3) - 1;
      if (cp < 128 || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      const auto next = a.next(*id, cp);
      ASSERT_TRUE(next.has_value());
      const MatcherState want = m.advance_code_point(s, cp);
      if (want.dead()) {
        EXPECT_EQ(*next, StateAutomaton::kDead) << std::hex << cp;
      } else {
        ASSERT_NE(*next, StateAutomaton::kDead) << std::hex << cp;
        EXPECT_EQ(a.state(*next).key(), want.key()) << std::hex << cp;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(StateAutomaton, TableIsBoundedTrimmedBetweenWalksAndGivesUpWithinOne) {
  // Every count of a long repetition is a state of its own: 5 x 10,000 of them.
  auto g = parse_gbnf("root ::= \"a\"{0,10000} \"b\"{0,10000} \"c\"{0,10000} \"d\"{0,10000} \"e\"{0,10000}\n");
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  StateAutomaton a(m);
  MatcherState s = m.initial();
  std::optional<uint32_t> id = a.id_of(s);
  size_t interned = 1;
  uint32_t letter = 'a';
  while (id.has_value()) {
    auto next = a.next(*id, letter);
    if (next && *next == StateAutomaton::kDead) {
      ASSERT_LT(letter, static_cast<uint32_t>('e'));
      ++letter;
      continue;
    }
    id = next;
    if (id) ++interned;
  }
  // Within one walk the table grows to twice its size, then refuses instead of growing further.
  EXPECT_EQ(interned, 2 * StateAutomaton::kMaxStates - 1);
  EXPECT_EQ(a.num_states(), 2 * StateAutomaton::kMaxStates);
  a.trim();
  EXPECT_EQ(a.num_states(), 1u);
  const auto again = a.id_of(m.initial());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, 1u);
  const auto b = a.next(*again, 'b');
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a.state(*b).key(), m.advance(m.initial(), "b").key());
  EXPECT_EQ(*a.next(*again, 'z'), StateAutomaton::kDead);
  a.trim();  // not full: nothing is dropped
  EXPECT_EQ(a.num_states(), 3u);
}

}  // namespace
}  // namespace pagoda::grammar
