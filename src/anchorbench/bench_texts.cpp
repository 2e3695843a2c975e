#include "anchorbench/bench_texts.h"

#include <algorithm>
#include <array>

#include "util/rng.h"

namespace pagoda::anchorbench {
namespace {

constexpr std::array<const char*, 16> kNames = {"Lily", "Tom",  "Sue", "Ben",  "Mia", "Max", "Anna", "Sam",
                                                "Lucy", "Jack", "Amy", "Tim", "Zoe", "Bob", "Kate", "Leo"};
constexpr std::array<const char*, 8> kPets = {"dog", "cat", "bird", "fish", "frog", "bunny", "duck", "pony"};
constexpr std::array<const char*, 8> kColors = {"red", "blue", "green", "brown", "white", "black", "pink", "yellow"};
constexpr std::array<const char*, 8> kThings = {"ball", "kite", "car", "book", "hat", "boat", "cake", "box"};
constexpr std::array<const char*, 8> kPlaces = {"park", "house", "garden", "school", "forest", "lake", "town", "shop"};

template <size_t N>
const char* pick(const std::array<const char*, N>& a, uint64_t i) {
  return a[i % N];
}
}  // namespace

constexpr std::array<const char*, 8> kDays = {"day", "morning", "evening", "week", "summer", "winter", "spring", "night"};

std::string fact_sentence(uint64_t index) {
  // Mixed radix, so that indices below 16 * 4 * 8 * 8 * 15 = 61,440 give distinct sentences.
  const uint64_t who = index % 16, form = (index / 16) % 4, x = (index / 64) % 8, y = (index / 512) % 8,
                 z = (index / 4096) % 15;
  const std::string a = kNames[who], b = kNames[(who + 1 + z) % 16];
  switch (form) {
    case 0:
      return a + " has a " + kPets[x] + " named " + b + ". " + b + " is " + kColors[y] + ".";
    case 1:
      return a + " likes the " + kColors[x] + " " + kThings[y] + " of " + b + ".";
    case 2:
      return a + " lives near the " + kPlaces[x] + " with " + b + " and a " + kThings[y] + ".";
    default:
      return a + " and " + b + " play in the " + kPlaces[x] + " every " + kDays[y] + ".";
  }
}

std::string anchor_text_of_length(const Tokenizer& tok, int32_t tokens, uint64_t seed) {
  // Words from fact sentences, appended while the count stays at most `tokens`; a word that overshoots is skipped
  // for the next one (shorter words land the count exactly in practice).
  auto count = [&](const std::string& t) { return static_cast<int32_t>(tok.encode(t, true, false).size()); };
  std::string text;
  Rng rng(seed);
  int32_t have = count(text);
  for (int attempts = 0; have < tokens && attempts < 100000; ++attempts) {
    const std::string sentence = fact_sentence(rng.next_u64() % 100000);
    size_t start = 0;
    while (start < sentence.size() && have < tokens) {
      size_t end = sentence.find(' ', start);
      if (end == std::string::npos) end = sentence.size();
      const std::string word = sentence.substr(start, end - start);
      const std::string candidate = text.empty() ? word : text + " " + word;
      const int32_t n = count(candidate);
      if (n <= tokens) {
        text = candidate;
        have = n;
      }
      start = end + 1;
    }
  }
  return text;
}

std::vector<std::string> snippet_texts(int32_t n, uint64_t seed) {
  std::vector<std::string> out;
  out.reserve(n);
  Rng rng(seed);
  for (int32_t i = 0; i < n; ++i) {
    const int sentences = 1 + static_cast<int>(rng.next_u64() % 3);
    std::string s;
    for (int k = 0; k < sentences; ++k) s += (k ? " " : "") + fact_sentence(static_cast<uint64_t>(i) * 3 + k);
    out.push_back(s);
  }
  return out;
}

std::vector<FactProbe> fact_probes(int32_t n) {
  std::vector<FactProbe> out;
  for (int32_t i = 0; i < n; ++i) {
    const char* who = pick(kNames, i);
    const char* pet = pick(kPets, i);
    const char* name = pick(kNames, i + 5 + i / 16);
    const char* color = pick(kColors, i * 3 + 1);
    FactProbe f;
    f.anchor_text = std::string(who) + " has a " + pet + " named " + name + ". " + name + " is " + color + ".";
    f.probes = {std::string(who) + " has a " + pet + " named",
                std::string("One day, ") + who + " went to the park with the " + pet + " named"};
    f.answer = std::string(" ") + name;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace pagoda::anchorbench
