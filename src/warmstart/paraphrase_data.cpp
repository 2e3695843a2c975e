#include "warmstart/paraphrase_data.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "util/rng.h"
#include "warmstart/synonyms.h"

namespace pagoda::warmstart {

namespace {

const std::vector<std::string> kNames = {"Lily", "Tom", "Sue", "Ben", "Mia", "Max", "Anna", "Sam", "Lucy", "Tim", "Jack", "Zoe"};
const std::vector<std::string> kObjects = {"ball", "kite", "toy car", "doll", "red box", "book", "hat", "cake", "blue cup", "teddy bear"};
const std::vector<std::string> kPlaces = {"park", "garden", "forest", "beach", "house", "school", "farm", "river", "town", "hill"};
const std::vector<std::string> kAnimals = {"cat", "dog", "bird", "frog", "bunny", "duck", "fish", "puppy"};
const std::vector<std::string> kEvents = {"it started to rain", "a big dog ran by", "the wind blew very hard",
                                          "a bird sang a song", "the sun came out", "a loud noise came from the trees",
                                          "their mom called them home", "a little boat floated by"};
// Body sentences: the story goes on (length changes add or drop one at the end).
const std::vector<std::string> kBody = {
    "{A} looked at the {O} and smiled.", "They played together all day long.", "The sky was blue and the grass was green.",
    "{B} laughed and ran to the {P}.", "{A} wanted to show the {O} to mom.", "The {N} jumped up and down.",
    "They saw a big tree with red apples.", "{B} said it was the best day ever.", "{A} was a little tired but happy.",
    "The {N} found a small hole in the ground.", "They shared a snack and talked.", "{B} gave the {N} some water.",
    "It was a warm and sunny day.", "{A} ran fast and {B} ran after.", "They made a house out of sticks.",
    "The {O} was soft and nice.", "A friendly {N} came to say hello.", "{A} and {B} sat down to rest."};

// Paraphrase operator 1: synonyms (applied to a random subset of occurrences).
const std::vector<std::pair<std::string, std::string>> kSynonyms = {
    {"little", "small"}, {"happy", "glad"}, {"big", "large"}, {"liked", "loved"}, {"went", "walked"},
    {"saw", "spotted"}, {"very", "really"}, {"said", "told them"}, {"fast", "quickly"}, {"day", "morning"}};

// The templates: an opening sentence, a middle (two sentences that may swap), and a closing that names both roles
// (the adversarial role swap exchanges {A} and {B} there) with a verb that may be negated.
struct Template {
  std::string opening;
  std::array<std::string, 2> middle;
  std::string closing;       // contains {A} ... {B}; "liked"-type verb marked as {V}
  std::string verb;          // positive form of {V}
  std::string negated_verb;  // negation of {V}
  std::string continuation;
};

const std::vector<Template> kTemplates = {
    {"Once upon a time, there was a little girl named {A}.", {"She had a {O} that she liked very much.", "One day she went to the {P} with her friend {B}."}, "{A} {V} {B} the {O}.", "gave", "did not give", "{B} was very happy and said thank you."},
    {"Once upon a time, there was a boy named {A}.", {"He lived in a small house near the {P}.", "He had a pet {N} who was his best friend."}, "{A} {V} {B} to the {P}.", "took", "did not take", "They had a lot of fun together."},
    {"One day, {A} and {B} went to the {P}.", {"They wanted to find a {O}.", "The weather was nice and warm."}, "{A} {V} {B} find the {O}.", "helped", "did not help", "Then they went home for dinner."},
    {"There was a little {N} who lived in the {P}.", {"The {N} was friends with {A}.", "Every day {A} came to play."}, "{A} {V} {B} about the {N}.", "told", "did not tell", "The {N} was happy to have friends."},
    {"{A} had a big {O}.", {"{A} liked to play with it in the {P}.", "One day, {B} came to play too."}, "{A} {V} the {O} with {B}.", "shared", "did not share", "They played until the sun went down."},
    {"Once there was a kind girl called {A}.", {"She liked to help her friends.", "Her friend {B} lost a {O} in the {P}."}, "{A} {V} {B} look for it.", "helped", "did not help", "At last they found it under a tree."},
    {"In a small town, there lived a boy named {A}.", {"He loved to run and jump.", "One morning he saw a {N} near the {P}."}, "{A} {V} {B} to see the {N}.", "asked", "did not ask", "The {N} looked at them and ran away."},
    {"One sunny day, {A} went to the {P} with mom.", {"{A} saw a shiny {O} on the ground.", "A girl named {B} was there too."}, "{A} {V} the {O} to {B}.", "showed", "did not show", "{B} smiled and said it was pretty."},
    {"Once upon a time, a little {N} wanted a friend.", {"It looked all over the {P}.", "Then it met {A} and {B}."}, "{A} {V} {B} to the {N}.", "waved", "did not wave", "The {N} was not alone anymore."},
    {"{A} and {B} were best friends.", {"They liked to play in the {P}.", "One day they found a {O}."}, "{A} {V} {B} the {O}.", "gave", "did not give", "They kept it in a safe place."},
    {"There was a girl named {A} who had a {O}.", {"She took it everywhere she went.", "One day she went to the {P}."}, "{A} {V} {B} with the {O}.", "played", "did not play", "It was the best day of the summer."},
    {"Once upon a time, {A} found a {N} in the {P}.", {"The {N} was sad and cold.", "{A} wanted to help it."}, "{A} {V} {B} to bring a blanket.", "asked", "did not ask", "Soon the {N} was warm and happy."},
};

struct Fill {
  std::string A, B, O, P, N, E;
};

std::string substitute(std::string s, const Fill& f, const std::string& verb) {
  const std::map<std::string, std::string> slots = {{"{A}", f.A}, {"{B}", f.B}, {"{O}", f.O},
                                                    {"{P}", f.P}, {"{N}", f.N}, {"{V}", verb}};
  for (const auto& [key, value] : slots)
    for (size_t pos; (pos = s.find(key)) != std::string::npos;) s.replace(pos, key.size(), value);
  return s;
}

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[rng.next_u64() % v.size()];
}

struct Instance {
  const Template* t;
  Fill fill;
  std::vector<std::string> body;  // body sentences, already filled
};

// One rendering of an instance. The operators: synonyms, middle order, an inserted clause, body length delta.
std::string render(const Instance& in, Rng& rng, bool paraphrase, bool swap_roles, bool negate) {
  Fill f = in.fill;
  std::vector<std::string> s;
  s.push_back(substitute(in.t->opening, f, ""));
  std::array<std::string, 2> mid = {substitute(in.t->middle[0], f, ""), substitute(in.t->middle[1], f, "")};
  if (paraphrase && rng.next_double() < 0.5) std::swap(mid[0], mid[1]);
  s.push_back(mid[0]);
  if (paraphrase && rng.next_double() < 0.5) s.push_back("Then " + substitute("{E}.", f, ""));
  s.push_back(mid[1]);
  size_t n_body = in.body.size();
  if (paraphrase && n_body > 0 && rng.next_double() < 0.5) n_body -= 1;  // length change
  for (size_t i = 0; i < n_body; ++i) s.push_back(in.body[i]);
  if (paraphrase && rng.next_double() < 0.5) s.push_back(substitute("Suddenly, {E}.", f, ""));
  Fill closing = f;
  if (swap_roles) std::swap(closing.A, closing.B);
  s.push_back(substitute(in.t->closing, closing, negate ? in.t->negated_verb : in.t->verb));
  std::string text;
  for (const auto& sentence : s) text += (text.empty() ? "" : " ") + sentence;
  return paraphrase ? apply_synonyms(text, kSynonyms, rng) : text;
}

}  // namespace

PairSplit generate_pairs(const DataOptions& o) {
  PairSplit split;
  Rng rng(o.seed);
  for (int ti = 0; ti < kNumTemplates; ++ti) {
    const Template& t = kTemplates[ti];
    const int n = o.instances_per_template + o.adversarial_per_template;
    for (int k = 0; k < n; ++k) {
      Instance in;
      in.t = &t;
      in.fill.A = pick(rng, kNames);
      do in.fill.B = pick(rng, kNames);
      while (in.fill.B == in.fill.A);
      in.fill.O = pick(rng, kObjects);
      in.fill.P = pick(rng, kPlaces);
      in.fill.N = pick(rng, kAnimals);
      in.fill.E = pick(rng, kEvents);
      // Lengths spread evenly over the instances of a template (0 .. max body sentences).
      const int n_body = n > 1 ? k * o.max_body_sentences / (n - 1) : 0;
      for (int b = 0; b < n_body; ++b) in.body.push_back(substitute(pick(rng, kBody), in.fill, ""));
      PromptPair p;
      p.template_id = ti;
      p.instance = k;
      p.adversarial = k >= o.instances_per_template;
      p.source = render(in, rng, /*paraphrase=*/true, false, false);
      if (p.adversarial) {
        // Same words, other meaning: the source's rendering with roles swapped or the verb negated.
        const bool swap = rng.next_double() < 0.5;
        Rng replay(o.seed * 1000003u + ti * 101u + k);
        Rng replay2 = replay;
        p.source = render(in, replay, true, false, false);
        p.target = render(in, replay2, true, swap, !swap);
      } else {
        p.target = render(in, rng, /*paraphrase=*/true, false, false);
      }
      p.continuation = substitute(t.continuation, in.fill, "");
      (ti < kNumTemplates - kNumTestTemplates ? split.train : split.test).push_back(std::move(p));
    }
  }
  return split;
}

}  // namespace pagoda::warmstart
