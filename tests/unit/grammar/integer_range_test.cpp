// Exact integer ranges: every integer near the bounds is accepted exactly when it lies in the range, in JSON's
// canonical form only; and the schema keywords map onto the range as JSON Schema defines them.
#include "grammar/integer_range.h"

#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "util/rng.h"

namespace pagoda::grammar {
namespace {

GrammarMatcher range_matcher(int64_t lo, int64_t hi) {
  auto g = parse_gbnf("root ::= " + integer_range_gbnf(lo, hi) + "\n");
  EXPECT_TRUE(g.ok()) << integer_range_gbnf(lo, hi) << ": " << (g.ok() ? "" : g.error().message);
  return GrammarMatcher(*g);
}

TEST(IntegerRange, ExactlyTheIntegersInTheRange) {
  Rng rng(11);
  std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 0},     {0, 9},       {1, 1},     {-1, -1},  {-9, 9},
                                                      {10, 99},  {12, 45},     {15, 23},   {0, 100},  {7, 1000},
                                                      {-100, 0}, {-345, -12},  {-50, 900}, {99, 101}, {100, 199},
                                                      {0, 120},  {-1000, 1000}, {1, 9999}};
  for (int i = 0; i < 40; ++i) {
    const int64_t a = static_cast<int64_t>(rng.next_u64() % 2401) - 1200;
    const int64_t b = static_cast<int64_t>(rng.next_u64() % 2401) - 1200;
    ranges.emplace_back(std::min(a, b), std::max(a, b));
  }
  for (const auto& [lo, hi] : ranges) {
    const GrammarMatcher m = range_matcher(lo, hi);
    for (int64_t n = -1300; n <= 1300; ++n)
      ASSERT_EQ(m.accepts(std::to_string(n)), lo <= n && n <= hi) << "[" << lo << ", " << hi << "] " << n;
    for (int64_t n : {lo, hi, lo + 1, hi - 1, lo * 10, hi * 10 + 5})
      EXPECT_EQ(m.accepts(std::to_string(n)), lo <= n && n <= hi) << "[" << lo << ", " << hi << "] " << n;
    for (const char* bad : {"-0", "00", "01", "+1", "", "-", "1.0", "1e2", " 1"}) EXPECT_FALSE(m.accepts(bad)) << bad;
  }
}

TEST(IntegerRange, LargeBoundsStayExact) {
  const int64_t lo = 1'234'567'890'123, hi = 9'876'543'210'987'654;
  const GrammarMatcher m = range_matcher(lo, hi);
  for (int64_t n : {lo, lo + 1, hi, hi - 1, int64_t{5'000'000'000'000'000}})
    EXPECT_TRUE(m.accepts(std::to_string(n))) << n;
  for (int64_t n : {lo - 1, hi + 1, int64_t{999'999'999'999}, int64_t{9'999'999'999'999'999}})
    EXPECT_FALSE(m.accepts(std::to_string(n))) << n;
  const GrammarMatcher full = range_matcher(-kMaxIntegerBound, kMaxIntegerBound);
  EXPECT_TRUE(full.accepts("-9999999999999999"));
  EXPECT_FALSE(full.accepts("10000000000000000"));
}

TEST(IntegerRange, SchemaKeywordsMapOntoTheRange) {
  auto accepts = [](const char* schema, const std::string& value) {
    auto text = json_schema_to_gbnf(nlohmann::ordered_json::parse(schema));
    EXPECT_TRUE(text.ok()) << schema;
    auto g = parse_gbnf(*text);
    EXPECT_TRUE(g.ok());
    return GrammarMatcher(*g).accepts(value);
  };
  const char* age = R"({"type": "integer", "minimum": 0, "maximum": 150})";
  EXPECT_TRUE(accepts(age, "150"));
  EXPECT_FALSE(accepts(age, "151"));
  EXPECT_FALSE(accepts(age, "999"));
  EXPECT_FALSE(accepts(age, "-1"));
  const char* excl = R"({"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 10})";
  EXPECT_FALSE(accepts(excl, "2"));
  EXPECT_TRUE(accepts(excl, "3"));
  EXPECT_TRUE(accepts(excl, "9"));
  EXPECT_FALSE(accepts(excl, "10"));
  const char* fractional = R"({"type": "integer", "minimum": -3.5, "maximum": 7.9})";
  EXPECT_TRUE(accepts(fractional, "-3"));
  EXPECT_FALSE(accepts(fractional, "-4"));
  EXPECT_TRUE(accepts(fractional, "7"));
  EXPECT_FALSE(accepts(fractional, "8"));
  const char* one_sided = R"({"type": "integer", "minimum": 18})";
  EXPECT_TRUE(accepts(one_sided, "18"));
  EXPECT_TRUE(accepts(one_sided, "123456"));
  EXPECT_FALSE(accepts(one_sided, "17"));
  EXPECT_FALSE(accepts(one_sided, "-20"));
  auto none = json_schema_to_gbnf(nlohmann::ordered_json::parse(R"({"type": "integer", "minimum": 2.2, "maximum": 2.8})"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no integer"), std::string::npos) << none.error().message;
}

}  // namespace
}  // namespace pagoda::grammar
