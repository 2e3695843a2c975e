#include "tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

TEST(ByteLevelTest, AlphabetIsGpt2s) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");  // soft hyphen is not printable: U+0143, the last extra
  EXPECT_EQ(byte_level_char(0xFF), "\xC3\xBF");  // ÿ maps to itself
}

TEST(ByteLevelTest, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
}

TEST(ByteLevelTest, CharactersOutsideTheAlphabetStayVisible) {
  // "中" is no alphabet character; llama.cpp renders it as [UNK_BYTE_0x<utf8 hex><token text>].
  EXPECT_EQ(byte_level_decode("a\xE4\xB8\xAD"), "a[UNK_BYTE_0xe4b8ada\xE4\xB8\xAD]");
}

TEST(Utf8Test, LenientDecodeFollowsLlamaCpp) {
  using V = std::vector<uint32_t>;
  EXPECT_EQ(decode_utf8_lenient("a\xC3\xA9"), (V{'a', 0xE9}));
  EXPECT_EQ(decode_utf8_lenient("\x80x"), (V{0xFFFD, 'x'}));              // stray continuation: one U+FFFD
  EXPECT_EQ(decode_utf8_lenient("\xE2\x82x"), (V{0xFFFD, 0xFFFD, 'x'}));  // truncated: each byte alone
  EXPECT_EQ(decode_utf8_lenient("\xC0\x80"), (V{0}));                     // overlong accepted
  EXPECT_EQ(decode_utf8_lenient("\xED\xA0\x80"), (V{0xD800}));            // surrogate accepted
  EXPECT_EQ(decode_utf8_lenient("\xF8"), (V{0xFFFD}));
}

TEST(Utf8Test, NormalizeKeepsSurrogatesAndDropsImpossibleCodePoints) {
  EXPECT_EQ(normalize_utf8_lenient("\xC0\x80"), std::string(1, '\0'));
  EXPECT_EQ(normalize_utf8_lenient("\xED\xA0\x80"), "\xED\xA0\x80");
  EXPECT_EQ(normalize_utf8_lenient("\xF7\xBF\xBF\xBF"), "\xEF\xBF\xBD");
  EXPECT_EQ(normalize_utf8_lenient("\xFF"), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace pagoda
