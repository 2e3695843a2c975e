#include "anchor/base64.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace pagoda {
namespace {

// Decoding `text` fails with a message that contains every one of `parts`.
void expect_rejected(std::string_view text, std::initializer_list<std::string_view> parts) {
  SCOPED_TRACE(std::string(text));
  auto decoded = decode_base64(text);
  ASSERT_FALSE(decoded.ok()) << "decoded to " << decoded->size() << " bytes";
  for (auto part : parts)
    EXPECT_NE(decoded.error().message.find(part), std::string::npos)
        << "'" << decoded.error().message << "' lacks '" << part << "'";
}

// RFC 4648 section 10.
TEST(Base64Vectors, Rfc4648) {
  const struct {
    const char* bytes;
    const char* text;
  } cases[] = {{"", ""},
               {"f", "Zg=="},
               {"fo", "Zm8="},
               {"foo", "Zm9v"},
               {"foob", "Zm9vYg=="},
               {"fooba", "Zm9vYmE="},
               {"foobar", "Zm9vYmFy"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(encode_base64(c.bytes), c.text);
    auto decoded = decode_base64(c.text);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, c.bytes);
  }
}

TEST(Base64Vectors, UsesTheStandardAlphabetForTheTopValues) {
  EXPECT_EQ(encode_base64("\xfb\xff\xbf"), "+/+/");
  EXPECT_EQ(encode_base64("\xff\xff\xff"), "////");
  EXPECT_EQ(encode_base64(std::string(3, '\0')), "AAAA");
  EXPECT_EQ(*decode_base64("+/+/"), "\xfb\xff\xbf");
  const std::string every_value(
      "\x00\x10\x83\x10\x51\x87\x20\x92\x8b\x30\xd3\x8f\x41\x14\x93\x51\x55\x97\x61\x96\x9b"
      "\x71\xd7\x9f\x82\x18\xa3\x92\x59\xa7\xa2\x9a\xab\xb2\xdb\xaf\xc3\x1c\xb3\xd3\x5d\xb7"
      "\xe3\x9e\xbb\xf3\xdf\xbf",
      48);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  EXPECT_EQ(encode_base64(every_value), alphabet);
  EXPECT_EQ(*decode_base64(alphabet), every_value);
}

TEST(Base64RoundTrip, EveryByteValueAndEveryTailLength) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t length = 0; length <= all.size(); ++length) {
    const std::string bytes = all.substr(all.size() - length);  // ends at 0xff: non-zero bits reach the tail
    const std::string text = encode_base64(bytes);
    EXPECT_EQ(text.size() % 4, 0u);
    auto decoded = decode_base64(text);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, bytes);
  }
}

TEST(Base64Decode, RejectsALengthNotAMultipleOfFour) {
  expect_rejected("Zg", {"length 2 is not a multiple of 4"});
  expect_rejected("Zg=", {"length 3"});
  expect_rejected("Zm9vY", {"length 5"});
  expect_rejected("Zm9vYg", {"length 6"});  // unpadded
  expect_rejected("Zm9vYg===", {"length 9"});
}

TEST(Base64Decode, RejectsCharactersOutsideTheAlphabet) {
  const struct {
    std::string_view text;
    const char* part;
  } cases[] = {
      {"Zm9v\nYmF", "character 0x0a at offset 4"},                   // a line break, as MIME base64 has
      {"Zm9\n", "character 0x0a at offset 3"},                       // a trailing line break
      {"Zm 9", "character 0x20 at offset 2"},                        // a space
      {" Zm9", "character 0x20 at offset 0"},                        // leading whitespace
      {"Zm9\t", "character 0x09 at offset 3"},                       // a tab
      {"Zm9\r", "character 0x0d at offset 3"},                       // a carriage return
      {"Zm-v", "character 0x2d at offset 2"},                        // URL-safe alphabet
      {"Zm_v", "character 0x5f at offset 2"},                        // URL-safe alphabet
      {"Zm9v.mFy", "character 0x2e at offset 4"},                    // punctuation
      {"Zm9vYmF*", "character 0x2a at offset 7"},                    // punctuation in the last quantum
      {std::string_view("Zm\0v", 4), "character 0x00 at offset 2"},  // NUL
      {"Zm\xc3\xa9", "character 0xc3 at offset 2"},                  // non-ASCII (UTF-8 "é")
      {"Zm9\xff", "character 0xff at offset 3"},                     // a byte above 0x7f
      {"Zm9vYg\x7f=", "character 0x7f at offset 6"},                 // DEL, before padding
  };
  for (const auto& c : cases) expect_rejected(c.text, {c.part, "not in the standard alphabet"});
}

TEST(Base64Decode, RejectsPaddingAnywhereButTheEnd) {
  expect_rejected("Zg=A", {"padding '=' at offset 2"});
  expect_rejected("=Zm9", {"padding '=' at offset 0"});
  expect_rejected("Zm==Zm9v", {"padding '=' at offset 2"});
  expect_rejected("Zg==Zg==", {"padding '=' at offset 2"});
  expect_rejected("Z===", {"padding '=' at offset 1"});
  expect_rejected("====", {"padding '=' at offset 0"});
  expect_rejected("Zm9v====", {"padding '=' at offset 4"});
  expect_rejected("Zm9vZ=8=", {"padding '=' at offset 5"});
}

// The unused low bits of the last data character must be zero: "Zh==" would otherwise be a second spelling of
// "f" ("Zg==").
TEST(Base64Decode, RejectsNonZeroUnusedBits) {
  expect_rejected("Zh==", {"offset 1", "non-zero unused bits"});
  expect_rejected("Z/==", {"offset 1", "non-zero unused bits"});
  expect_rejected("Zm9=", {"offset 2", "non-zero unused bits"});  // "fo" is "Zm8="
  expect_rejected("Zm9vYmF=", {"offset 6", "non-zero unused bits"});
  expect_rejected("AB==", {"offset 1"});
  expect_rejected("AAB=", {"offset 2"});
  EXPECT_TRUE(decode_base64("AA==").ok());
  EXPECT_TRUE(decode_base64("AAA=").ok());
  EXPECT_TRUE(decode_base64("/w==").ok());
  EXPECT_TRUE(decode_base64("//8=").ok());
}

// Accepting only canonical text means a text that decodes is exactly what encoding its bytes gives back.
TEST(Base64Decode, AcceptedTextIsTheCanonicalEncoding) {
  for (std::string_view text : {"", "AA==", "AAA=", "AAAA", "+/8=", "Zm9vYmFy", "/w==", "YWJjZA=="}) {
    auto decoded = decode_base64(text);
    ASSERT_TRUE(decoded.ok()) << text << ": " << decoded.error().message;
    EXPECT_EQ(encode_base64(*decoded), text);
  }
}

TEST(Base64Decode, ErrorsDoNotEchoTheInput) {
  auto decoded = decode_base64("Zm9v\x1b[31");
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().message.find('\x1b'), std::string::npos);
  EXPECT_NE(decoded.error().message.find("0x1b at offset 4"), std::string::npos) << decoded.error().message;
}

}  // namespace
}  // namespace pagoda
