#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

TEST(StopMatcher, StopsBeforeAStopStringSplitAcrossPushes) {
  StopMatcher m({"</end>"});
  bool stopped = false;
  std::string out = m.push("Hello </e", &stopped);
  EXPECT_FALSE(stopped);
  EXPECT_EQ(out, "Hell");  // "o </e" could still start "</end>": held back
  out += m.push("nd> more", &stopped);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "Hello ");
  EXPECT_EQ(m.matched(), "</end>");
}

TEST(StopMatcher, TheEarliestStopStringIsTheOneMatched) {
  StopMatcher m({"World", "lo W", "xyz"});
  bool stopped = false;
  EXPECT_EQ(m.matched(), "");
  EXPECT_EQ(m.push("Hello World", &stopped), "Hel");
  EXPECT_TRUE(stopped);
  EXPECT_EQ(m.matched(), "lo W");
}

TEST(StopMatcher, HeldTextIsReleasedWhenItDoesNotMatch) {
  StopMatcher m({"xyz"});
  bool stopped = false;
  std::string out = m.push("abx", &stopped);
  out += m.push("y", &stopped);
  out += m.push("q", &stopped);
  EXPECT_FALSE(stopped);
  out += m.flush();
  EXPECT_EQ(out, "abxyq");
}

TEST(StopMatcher, EarliestOfSeveralStopStringsWins) {
  StopMatcher m({"cd", "b"});
  bool stopped = false;
  EXPECT_EQ(m.push("abcd", &stopped), "a");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, NeverSplitsAUtf8Character) {
  StopMatcher m({"abc"});  // holds back 2 bytes
  bool stopped = false;
  const std::string out = m.push("x\xE2\x82\xAC", &stopped);  // "x€": a cut 2 bytes from the end is mid-character
  EXPECT_EQ(out, "x");
  EXPECT_EQ(m.flush(), "\xE2\x82\xAC");
}

TEST(StopMatcher, NoStopStringsPassesEverythingThrough) {
  StopMatcher m({});
  bool stopped = false;
  EXPECT_EQ(m.push("all of it", &stopped), "all of it");
  EXPECT_FALSE(stopped);
}

}  // namespace
}  // namespace pagoda
