// Grammar mask cost (docs/PERFORMANCE.md, issue #15): random walks through a schema's grammar on a vocabulary,
// timing at every state the plain trie walk (the matcher advanced at every trie node) against the walk through the
// grammar's state automaton (kept across states, as each compiled grammar keeps it), and checking that the two
// masks are equal. Usage: pagoda_grammar_masks VOCAB.gguf BODY.json [walks=4] [seed=1]
// BODY.json: a request body with one constraint field (json_schema, response_format, grammar, guided_choice).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "api/output_constraint.h"
#include "grammar/state_automaton.h"
#include "io/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "util/rng.h"

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf BODY.json [walks] [seed]\n", argv[0]);
    return 2;
  }
  const int walks = argc > 3 ? std::max(1, std::atoi(argv[3])) : 4;
  Rng rng(argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1);
  auto file = GgufFile::open(argv[1]);
  if (!file.ok()) return std::fprintf(stderr, "%s\n", file.error().message.c_str()), 1;
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return std::fprintf(stderr, "%s\n", tok.error().message.c_str()), 1;
  std::ifstream in(argv[2]);
  const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto t_compile = std::chrono::steady_clock::now();
  auto g = read_output_constraint(nlohmann::ordered_json::parse(body), **tok);
  if (!g.ok() || !*g) return std::fprintf(stderr, "no constraint: %s\n", g.ok() ? "" : g.error().message.c_str()), 1;
  std::printf("compile (vocabulary trie included): %.1f ms\n", ms_since(t_compile));
  const grammar::CompiledGrammar& cg = **g;
  const auto& m = cg.matcher();
  grammar::StateAutomaton automaton(m);
  const int32_t n_vocab = (*tok)->n_vocab();
  // [wide: more than half the vocabulary allowed (inside strings), narrow: the rest]
  std::vector<double> plain_ms[2], auto_ms[2];
  int steps = 0;
  for (int w = 0; w < walks; ++w) {
    grammar::MatcherState s = m.initial();
    for (int i = 0; i < 400 && !s.dead() && !s.must_end(); ++i) {
      auto t = std::chrono::steady_clock::now();
      const grammar::TokenMask plain = cg.trie().mask(m, s);
      const double p = ms_since(t);
      t = std::chrono::steady_clock::now();
      automaton.trim();
      const auto fast = cg.trie().mask(automaton, m, s);
      const double a = ms_since(t);
      if (!fast || fast->words != plain.words) {
        std::fprintf(stderr, "MISMATCH at walk %d step %d\n", w, i);
        return 1;
      }
      const int wide = plain.count() > static_cast<size_t>(n_vocab / 2);
      plain_ms[wide].push_back(p);
      auto_ms[wide].push_back(a);
      ++steps;
      std::vector<int32_t> ids;
      for (int32_t id = 0; id < n_vocab; ++id)
        if (plain.allowed(id) && !(*tok)->piece(id).empty()) ids.push_back(id);
      if (ids.empty()) break;
      s = m.advance(s, (*tok)->piece(ids[rng.next_u64() % ids.size()]));
    }
  }
  std::printf("%d states, %d walks, vocabulary %d, automaton %zu states; masks equal at every state\n", steps, walks,
              n_vocab, automaton.num_states());
  const char* names[2] = {"narrow (<= half the vocabulary allowed)", "wide (inside strings)"};
  for (int k = 0; k < 2; ++k) {
    double sp = 0, sa = 0;
    for (double v : plain_ms[k]) sp += v;
    for (double v : auto_ms[k]) sa += v;
    std::printf("%-42s n=%4zu  plain median %8.3f ms total %9.1f ms | automaton median %7.3f ms total %8.1f ms\n",
                names[k], plain_ms[k].size(), median(plain_ms[k]), sp, median(auto_ms[k]), sa);
  }
  return 0;
}
