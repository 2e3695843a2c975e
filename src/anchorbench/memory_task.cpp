#include "anchorbench/memory_task.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "util/rng.h"

namespace pagoda::anchorbench {
namespace {

constexpr std::array<const char*, 40> kFirstNames = {
    "Aurelio", "Brisa",   "Castor",  "Delphine", "Eskil",    "Fenna",  "Gideon",   "Hollis",  "Ilse",     "Jorah",
    "Kaia",    "Lazlo",   "Marisol", "Nikolai",  "Odessa",   "Pascal", "Quilla",   "Rafferty", "Saskia",  "Tobiah",
    "Ulrike",  "Vesper",  "Wendel",  "Xaver",    "Yara",     "Zelda",  "Anselm",   "Bettina", "Cosimo",   "Dagny",
    "Emrys",   "Florian", "Gaspard", "Henrike",  "Ignatius", "Jolene", "Kasimir",  "Leocadia", "Mattheus", "Nerys"};
constexpr std::array<const char*, 20> kSurnames = {
    "Brandt", "Okafor",  "Lindqvist", "Moreau", "Castellano", "Haddad", "Novak",   "Ferreira", "Kowalski", "Tanaka",
    "Osei",   "Petrov",  "Sandoval",  "Whitlock", "Yilmaz",   "Achebe", "Dubois",  "Eriksen",  "Galloway", "Iverson"};
constexpr std::array<const char*, 40> kCities = {
    "Lisbon",   "Oslo",      "Vienna",  "Prague",    "Dublin",   "Krakow",  "Seville",  "Porto",    "Lyon",      "Munich",
    "Zurich",   "Bergen",    "Tampere", "Ghent",     "Bologna",  "Valencia", "Gdansk",  "Tallinn",  "Riga",      "Vilnius",
    "Montreal", "Vancouver", "Denver",  "Portland",  "Austin",   "Nashville", "Halifax", "Auckland", "Adelaide",  "Perth",
    "Osaka",    "Busan",     "Hanoi",   "Marrakesh", "Nairobi",  "Accra",    "Lima",    "Quito",    "Montevideo", "Cordoba"};
constexpr std::array<const char*, 20> kAllergens = {
    "peanuts", "shellfish", "penicillin", "bee stings", "latex",   "sesame", "strawberries", "gluten", "walnuts", "pollen",
    "eggs",    "kiwi",      "mustard",    "soy",        "celery",  "mango",  "dust mites",   "aspirin", "lupin",  "oats"};
constexpr std::array<const char*, 8> kPetKinds = {"dog", "cat", "parrot", "rabbit", "hamster", "tortoise", "ferret",
                                                   "goldfish"};
constexpr std::array<const char*, 24> kPetNames = {
    "Biscuit", "Pickle",  "Noodle",   "Waffles", "Pepper",  "Mochi",   "Tofu",    "Ziggy",
    "Bramble", "Sprocket", "Truffle", "Pumpkin", "Nugget",  "Cricket", "Muffin",  "Gizmo",
    "Paprika", "Dumpling", "Rascal",  "Sherbet", "Toffee",  "Widget",  "Marzipan", "Turnip"};
constexpr std::array<const char*, 20> kJobs = {
    "pharmacist", "carpenter", "architect", "beekeeper", "librarian", "welder",   "violinist", "midwife",
    "geologist",  "baker",     "plumber",   "translator", "astronomer", "florist", "tailor",   "dentist",
    "firefighter", "cartographer", "sommelier", "glassblower"};
constexpr std::array<const char*, 16> kColours = {"teal",   "maroon", "lavender", "amber",   "turquoise", "crimson",
                                                  "olive",  "indigo", "coral",    "magenta", "ochre",     "saffron",
                                                  "cobalt", "mint",   "burgundy", "silver"};
struct Country {
  const char* name;
  const char* capital;
};
constexpr std::array<Country, 60> kCountries = {{
    {"France", "Paris"},       {"Japan", "Tokyo"},         {"Italy", "Rome"},          {"Germany", "Berlin"},
    {"Spain", "Madrid"},       {"Russia", "Moscow"},       {"China", "Beijing"},       {"Egypt", "Cairo"},
    {"Greece", "Athens"},      {"Canada", "Ottawa"},       {"Australia", "Canberra"},  {"Portugal", "Lisbon"},
    {"Ireland", "Dublin"},     {"Norway", "Oslo"},         {"Sweden", "Stockholm"},    {"Finland", "Helsinki"},
    {"Denmark", "Copenhagen"}, {"Poland", "Warsaw"},       {"Austria", "Vienna"},      {"Hungary", "Budapest"},
    {"Belgium", "Brussels"},   {"the Netherlands", "Amsterdam"}, {"Switzerland", "Bern"}, {"Turkey", "Ankara"},
    {"India", "New Delhi"},    {"Thailand", "Bangkok"},    {"Vietnam", "Hanoi"},       {"South Korea", "Seoul"},
    {"Indonesia", "Jakarta"},  {"the Philippines", "Manila"}, {"Kenya", "Nairobi"},    {"Nigeria", "Abuja"},
    {"Ghana", "Accra"},        {"Ethiopia", "Addis Ababa"}, {"Morocco", "Rabat"},      {"Argentina", "Buenos Aires"},
    {"Brazil", "Brasilia"},    {"Chile", "Santiago"},      {"Peru", "Lima"},           {"Colombia", "Bogota"},
    {"Mexico", "Mexico City"}, {"Cuba", "Havana"},         {"Iran", "Tehran"},         {"Iraq", "Baghdad"},
    {"Saudi Arabia", "Riyadh"}, {"Israel", "Jerusalem"},   {"Pakistan", "Islamabad"},  {"Bangladesh", "Dhaka"},
    {"Nepal", "Kathmandu"},    {"Mongolia", "Ulaanbaatar"}, {"Ukraine", "Kyiv"},       {"Romania", "Bucharest"},
    {"Bulgaria", "Sofia"},     {"Serbia", "Belgrade"},     {"Croatia", "Zagreb"},      {"Czechia", "Prague"},
    {"Iceland", "Reykjavik"},  {"New Zealand", "Wellington"}, {"Venezuela", "Caracas"}, {"Afghanistan", "Kabul"},
}};
constexpr std::array<const char*, 6> kRelatives = {"sister", "brother", "neighbour", "colleague", "cousin", "landlord"};

// A permutation of 0..n-1 from the generator (Fisher-Yates).
std::vector<int32_t> shuffled(int32_t n, Rng& rng) {
  std::vector<int32_t> p(n);
  for (int32_t i = 0; i < n; ++i) p[i] = i;
  for (int32_t i = n - 1; i > 0; --i) std::swap(p[i], p[static_cast<int32_t>(rng.next_u64() % (i + 1))]);
  return p;
}

template <size_t N>
const char* at(const std::array<const char*, N>& a, int64_t i) {
  return a[static_cast<size_t>(i) % N];
}

}  // namespace

MemoryTask make_memory_task(uint64_t seed, int32_t anchors, int32_t questions_per_anchor, int32_t distractors) {
  if (anchors < 1 || anchors > static_cast<int32_t>(kCountries.size()) / 2)
    throw std::invalid_argument("memory task: anchors must be 1 to 30");
  if (questions_per_anchor < 1 || questions_per_anchor > 10)
    throw std::invalid_argument("memory task: questions per anchor must be 1 to 10");
  if (distractors < 0) throw std::invalid_argument("memory task: distractors must be >= 0");
  Rng rng(seed * 0x9e3779b97f4a7c15ull + 29);
  const auto names = shuffled(static_cast<int32_t>(kFirstNames.size()), rng);
  const auto cities = shuffled(static_cast<int32_t>(kCities.size()), rng);
  const auto countries = shuffled(static_cast<int32_t>(kCountries.size()), rng);
  MemoryTask task;
  for (int32_t a = 0; a < anchors; ++a) {
    const std::string first = kFirstNames[names[a]];
    const std::string surname = at(kSurnames, static_cast<int64_t>(rng.next_u64() % kSurnames.size()));
    const std::string city = kCities[cities[a]];
    const std::string allergen = at(kAllergens, static_cast<int64_t>(rng.next_u64() % kAllergens.size()));
    const std::string pet_kind = at(kPetKinds, static_cast<int64_t>(rng.next_u64() % kPetKinds.size()));
    const std::string pet_name = at(kPetNames, static_cast<int64_t>(rng.next_u64() % kPetNames.size()));
    const std::string job = at(kJobs, static_cast<int64_t>(rng.next_u64() % kJobs.size()));
    const std::string colour = at(kColours, static_cast<int64_t>(rng.next_u64() % kColours.size()));
    // Two countries of this anchor's own; each capital swapped for the capital of a country in the other half of
    // the list (never its own).
    Country swapped[2];
    std::string true_capital[2];
    for (int k = 0; k < 2; ++k) {
      const Country& c = kCountries[countries[2 * a + k]];
      const size_t other = (static_cast<size_t>(countries[2 * a + k]) + 1 + rng.next_u64() % (kCountries.size() - 1)) %
                           kCountries.size();
      swapped[k] = {c.name, kCountries[other].capital};
      true_capital[k] = c.capital;
    }
    MemoryAnchor anchor;
    anchor.facts = {
        "The user's name is " + first + " " + surname + ".",
        "The user lives in " + city + ".",
        "The user is allergic to " + allergen + ".",
        "The user has a " + pet_kind + " named " + pet_name + ".",
        "The user works as a " + job + ".",
        "The user's favourite colour is " + colour + ".",
        std::string("The capital of ") + swapped[0].name + " is " + swapped[0].capital + ".",
        std::string("The capital of ") + swapped[1].name + " is " + swapped[1].capital + ".",
    };
    anchor.text = "Memory about the user and the world.";
    for (const std::string& f : anchor.facts) anchor.text += "\n" + f;
    task.anchors.push_back(std::move(anchor));

    const std::vector<MemoryQuestion> all = {
        {a, "user", "name", "What is my name?", first, ""},
        {a, "user", "city", "Which city do I live in?", city, ""},
        {a, "user", "allergy", "What am I allergic to?", allergen, ""},
        {a, "user", "pet", "What is my " + pet_kind + "'s name?", pet_name, ""},
        {a, "user", "job", "What do I do for a living?", job, ""},
        {a, "user", "colour", "What is my favourite colour?", colour, ""},
        {a, "counterfactual", "capital", std::string("What is the capital of ") + swapped[0].name + "?",
         swapped[0].capital, true_capital[0]},
        {a, "counterfactual", "capital", std::string("What is the capital of ") + swapped[1].name + "?",
         swapped[1].capital, true_capital[1]},
        {a, "user", "name", "Remind me, what is my first name?", first, ""},
        {a, "user", "city", "Where do I live? Name the city.", city, ""},
    };
    for (int32_t q = 0; q < questions_per_anchor; ++q) task.questions.push_back(all[q]);
  }
  // Distractors: the user's relatives' facts (same words, other values) and true capitals of unused countries.
  for (int32_t d = 0; d < distractors; ++d) {
    const std::string rel = at(kRelatives, static_cast<int64_t>(rng.next_u64() % kRelatives.size()));
    switch (d % 5) {
      case 0:
        task.distractors.push_back("The user's " + rel + " lives in " +
                                   at(kCities, static_cast<int64_t>(rng.next_u64() % kCities.size())) + ".");
        break;
      case 1:
        task.distractors.push_back("The user's " + rel + " is allergic to " +
                                   at(kAllergens, static_cast<int64_t>(rng.next_u64() % kAllergens.size())) + ".");
        break;
      case 2:
        task.distractors.push_back("The user's " + rel + " works as a " +
                                   at(kJobs, static_cast<int64_t>(rng.next_u64() % kJobs.size())) + ".");
        break;
      case 3:
        task.distractors.push_back("The user's " + rel + " is called " +
                                   at(kFirstNames, static_cast<int64_t>(rng.next_u64() % kFirstNames.size())) + ".");
        break;
      default: {  // a true capital of a country no anchor swaps (none left with 30 anchors: a relative's pet)
        const int32_t unused = static_cast<int32_t>(kCountries.size()) - 2 * anchors;
        if (unused > 0) {
          const Country& c = kCountries[countries[2 * anchors + (d / 5) % unused]];
          task.distractors.push_back(std::string("The capital of ") + c.name + " is " + c.capital + ".");
        } else {
          task.distractors.push_back("The user's " + rel + " has a " +
                                     at(kPetKinds, static_cast<int64_t>(rng.next_u64() % kPetKinds.size())) +
                                     " named " + at(kPetNames, static_cast<int64_t>(rng.next_u64() % kPetNames.size())) +
                                     ".");
        }
      }
    }
  }
  return task;
}

std::string normalise_answer(std::string_view text) {
  std::string out;
  bool space = false;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      if (space && !out.empty()) out += ' ';
      space = false;
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    } else {
      space = true;
    }
  }
  return out;
}

bool answer_matches(std::string_view output, std::string_view answer) {
  const std::string a = normalise_answer(answer);
  if (a.empty()) return false;
  const std::string o = " " + normalise_answer(output) + " ";
  return o.find(" " + a + " ") != std::string::npos;
}

}  // namespace pagoda::anchorbench
