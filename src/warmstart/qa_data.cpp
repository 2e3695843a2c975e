#include "warmstart/qa_data.h"

#include <array>
#include <cctype>
#include <map>

#include "util/rng.h"
#include "warmstart/synonyms.h"

namespace pagoda::warmstart {

namespace {

enum Fact { kPet, kColour, kTown, kFriend, kFood, kJob, kNumFacts };

const std::vector<std::string> kPeople = {"Lily", "Tom",  "Sara", "Ben",  "Mia",  "Max",  "Anna", "Sam",
                                          "Lucy", "Tim",  "Jack", "Zoe",  "Omar", "Nina", "Paul", "Ruth"};
const std::vector<std::string> kQaAnimals = {"dog", "cat", "rabbit", "parrot", "horse", "hamster"};
const std::vector<std::string> kPetNames = {"Pip", "Rex", "Biscuit", "Coco", "Bruno", "Luna", "Milo", "Daisy", "Oscar", "Pepper"};
const std::vector<std::string> kColours = {"red", "blue", "green", "yellow", "purple", "orange", "pink", "brown"};
const std::vector<std::string> kTowns = {"Lisbon", "Oslo", "Denver", "Cairo", "Dublin", "Kyoto", "Lima", "Perth", "Boston", "Naples"};
const std::vector<std::string> kFoods = {"pizza", "rice", "apples", "soup", "cheese", "noodles", "bread", "carrots"};
const std::vector<std::string> kJobs = {"baker", "nurse", "teacher", "pilot", "farmer", "doctor", "painter", "driver"};

// Each fact in three phrasings (paraphrases pick one each).
const std::array<std::array<std::string, 3>, kNumFacts> kFactPhrasings = {{
    {"{A} has a {N} called {V}.", "{A} owns a pet {N} named {V}.", "{A}'s {N} goes by the name {V}."},
    {"{A}'s favourite colour is {V}.", "The colour {A} likes best is {V}.", "Of all colours, {A} prefers {V}."},
    {"{A} lives in {V}.", "{A}'s home is in {V}.", "{A} has lived in {V} for many years."},
    {"{A}'s best friend is {V}.", "{A} and {V} are best friends.", "The closest friend of {A} is {V}."},
    {"{A}'s favourite food is {V}.", "{A} loves to eat {V}.", "More than any other food, {A} enjoys {V}."},
    {"{A} works as a {V}.", "{A} has a job as a {V}.", "By profession, {A} is a {V}."},
}};
// The question and the start of its answer: the prompt ends here, so the next token is the answer.
const std::array<std::string, kNumFacts> kQuestions = {
    "Question: What is the name of {A}'s {N}?\nAnswer: {A}'s {N} is called",
    "Question: What is {A}'s favourite colour?\nAnswer: {A}'s favourite colour is",
    "Question: Where does {A} live?\nAnswer: {A} lives in",
    "Question: Who is {A}'s best friend?\nAnswer: {A}'s best friend is",
    "Question: What food does {A} like most?\nAnswer: {A}'s favourite food is",
    "Question: What is {A}'s job?\nAnswer: {A} works as a",
};
const std::array<std::string, 2> kOpenings = {"Here are some facts about {A}.",
                                              "Once upon a time, there was a person named {A}."};
// Neutral sentences (no fact a question asks about): the length spread.
const std::vector<std::string> kFillers = {
    "The weather was mild that week.", "{A} often reads a book in the evening.", "On Sundays, {A} takes a long walk.",
    "There is a small shop at the end of the street.", "{A} wakes up early most days.",
    "The neighbours are kind and quiet.", "Last year, {A} learned to swim.", "{A} enjoys listening to music.",
    "The park nearby has tall trees.", "In winter, the streets are covered in snow.", "{A} keeps a diary.",
    "Sometimes {A} visits the library.", "{A} likes to drink tea in the morning.", "The house has a big window.",
    "{A} has two brothers.", "Every summer, {A} goes to the sea.", "{A} is saving money for a new bike.",
    "The bus to the city comes every hour.", "{A} writes letters to an old aunt.", "Most evenings are calm and warm."};
const std::vector<std::string> kInsertions = {"People in town know {A} well.", "{A} is a cheerful person.",
                                              "This is a short story about {A}."};
const std::vector<std::pair<std::string, std::string>> kQaSynonyms = {
    {"often", "frequently"}, {"small", "little"}, {"kind", "friendly"}, {"long", "lengthy"},
    {"early", "at dawn"},    {"big", "large"},    {"calm", "quiet"},    {"tall", "high"}};

struct QaFill {
  std::string A, N;
  std::array<std::string, kNumFacts> value;  // pet name, colour, town, friend, food, job
};

const std::vector<std::string>& values_of(int fact) {
  switch (fact) {
    case kPet: return kPetNames;
    case kColour: return kColours;
    case kTown: return kTowns;
    case kFriend: return kPeople;
    case kFood: return kFoods;
    default: return kJobs;
  }
}

template <typename T>
const T& pick_qa(Rng& rng, const std::vector<T>& v) {
  return v[rng.next_u64() % v.size()];
}

std::string fill_in(std::string s, const QaFill& f, const std::string& value = "") {
  const std::map<std::string, std::string> slots = {{"{A}", f.A}, {"{N}", f.N}, {"{V}", value}};
  for (const auto& [key, v] : slots)
    for (size_t pos; (pos = s.find(key)) != std::string::npos;) s.replace(pos, key.size(), v);
  return s;
}

// A value for `fact` that differs from every one in `avoid` (and from the person's own name for friends).
std::string other_value(Rng& rng, int fact, const QaFill& f, const std::vector<std::string>& avoid) {
  for (;;) {
    const std::string& v = pick_qa(rng, values_of(fact));
    bool clash = fact == kFriend && v == f.A;
    for (const auto& a : avoid) clash = clash || v == a;
    if (!clash) return v;
  }
}

QaFill random_fill(Rng& rng) {
  QaFill f;
  f.A = pick_qa(rng, kPeople);
  f.N = pick_qa(rng, kQaAnimals);
  for (int k = 0; k < kNumFacts; ++k) f.value[k] = other_value(rng, k, f, {});
  return f;
}

// One rendering: opening, the six facts (shuffled, each in a random phrasing), fillers (one fewer with
// probability 1/2), maybe an inserted sentence, synonyms over the statements; then the question, unchanged.
// Only `rng` decides the wording, so replaying a copy of it with another fill changes the values alone.
std::string render_qa_prompt(int framing, int asked, const QaFill& f, const std::vector<int>& fillers, Rng& rng) {
  std::vector<std::string> facts;
  for (int k = 0; k < kNumFacts; ++k) facts.push_back(fill_in(kFactPhrasings[k][rng.next_u64() % 3], f, f.value[k]));
  for (size_t i = facts.size(); i > 1; --i) std::swap(facts[i - 1], facts[rng.next_u64() % i]);
  size_t n_fill = fillers.size();
  if (n_fill > 0 && rng.next_double() < 0.5) --n_fill;
  std::vector<std::string> s = {fill_in(kOpenings[framing], f)};
  // Facts and fillers interleave: each filler goes after a random fact.
  std::vector<std::vector<std::string>> after(facts.size());
  for (size_t i = 0; i < n_fill; ++i) after[rng.next_u64() % facts.size()].push_back(fill_in(kFillers[fillers[i]], f));
  const bool insert = rng.next_double() < 0.5;
  const size_t insert_at = rng.next_u64() % facts.size();
  const std::string insertion = fill_in(pick_qa(rng, kInsertions), f);
  for (size_t i = 0; i < facts.size(); ++i) {
    s.push_back(facts[i]);
    if (insert && i == insert_at) s.push_back(insertion);
    for (auto& x : after[i]) s.push_back(std::move(x));
  }
  std::string text;
  for (const auto& sentence : s) text += (text.empty() ? "" : " ") + sentence;
  return apply_synonyms(text, kQaSynonyms, rng) + "\n" + fill_in(kQuestions[asked], f);
}

std::string normalise(const std::string& s) {
  std::string out;
  bool space = false;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      if (space && !out.empty()) out += ' ';
      out += static_cast<char>(std::tolower(c));
      space = false;
    } else {
      space = true;
    }
  }
  return out;
}

}  // namespace

bool answer_matches(const std::string& generated, const std::string& answer) {
  const std::string g = normalise(generated), a = normalise(answer);
  if (a.empty() || g.compare(0, a.size(), a) != 0) return false;
  return g.size() == a.size() || g[a.size()] == ' ';
}

PairSplit generate_qa_pairs(const QaDataOptions& o) {
  PairSplit split;
  Rng rng(o.seed);
  for (int ti = 0; ti < kNumQaTemplates; ++ti) {
    const int framing = ti / kNumFacts, asked = ti % kNumFacts;
    const bool test = ti >= kNumQaTemplates - kNumQaTestTemplates;
    const int n = o.instances_per_template + o.near_miss_per_template;
    for (int k = 0; k < n; ++k) {
      const QaFill fill = random_fill(rng);
      const int n_fill = n > 1 ? k * o.max_filler_sentences / (n - 1) : 0;
      std::vector<int> fillers;
      for (int i = 0; i < n_fill; ++i) fillers.push_back(static_cast<int>(rng.next_u64() % kFillers.size()));
      PromptPair p;
      p.template_id = ti;
      p.instance = k;
      p.adversarial = k >= o.instances_per_template;
      Rng wording(rng.next_u64());
      Rng target_wording = wording;  // a near-miss target replays the source's wording
      p.source = render_qa_prompt(framing, asked, fill, fillers, wording);
      QaFill target_fill = fill;
      if (p.adversarial) {
        target_fill.value[asked] = other_value(rng, asked, fill, {fill.value[asked]});
      } else {
        target_wording = Rng(rng.next_u64());
      }
      Rng near_miss_wording = target_wording;
      p.target = render_qa_prompt(framing, asked, target_fill, fillers, target_wording);
      p.answer = target_fill.value[asked];
      p.continuation = p.answer + ".";
      if (test) {
        const int index = static_cast<int>(split.test.size());
        if (!p.adversarial) {
          // The target's own wording with a third value for the asked fact.
          QaFill miss = fill;
          miss.value[asked] = other_value(rng, asked, fill, {fill.value[asked]});
          split.distractors.push_back(
              {render_qa_prompt(framing, asked, miss, fillers, near_miss_wording), true, index});
        }
        // Another person, any template.
        const int other = static_cast<int>(rng.next_u64() % kNumQaTemplates);
        Rng other_wording(rng.next_u64());
        std::vector<int> other_fillers;
        for (int i = 0; i < n_fill; ++i) other_fillers.push_back(static_cast<int>(rng.next_u64() % kFillers.size()));
        split.distractors.push_back(
            {render_qa_prompt(other / kNumFacts, other % kNumFacts, random_fill(rng), other_fillers, other_wording),
             false, -1});
      }
      (test ? split.test : split.train).push_back(std::move(p));
    }
  }
  return split;
}

}  // namespace pagoda::warmstart
