#include "tokenizer/streaming_detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "toy_vocabs.h"

namespace pagoda {
namespace {

using test_util::must_load;
using test_util::ToySpm;

const std::string kFffd = "\xEF\xBF\xBD";

// Strict UTF-8 check (no overlongs, surrogates or values past U+10FFFF), independent of the code under test.
bool is_valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cpt = 0;
    if (b < 0x80) {
      n = 1;
      cpt = b;
    } else if ((b & 0xE0) == 0xC0) {
      n = 2;
      cpt = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      n = 3;
      cpt = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      n = 4;
      cpt = b & 0x07;
    } else
      return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cpt = (cpt << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cpt < kMin[n] || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

class StreamingDetokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = must_load(spm_.gguf());
    ASSERT_NE(tok_, nullptr);
  }
  static TokenId byte(uint8_t b) { return ToySpm::byte_token(b); }
  ToySpm spm_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(StreamingDetokenizerTest, HoldsBackMultiByteCharacterUntilComplete) {
  StreamingDetokenizer stream(*tok_);
  // "€" = E2 82 AC, fed one byte token at a time.
  EXPECT_EQ(stream.push(byte(0xE2)), "");
  EXPECT_EQ(stream.push(byte(0x82)), "");
  EXPECT_EQ(stream.push(byte(0xAC)), "\xE2\x82\xAC");
  // "🦙" = F0 9F A6 99.
  EXPECT_EQ(stream.push(byte(0xF0)), "");
  EXPECT_EQ(stream.push(byte(0x9F)), "");
  EXPECT_EQ(stream.push(byte(0xA6)), "");
  EXPECT_EQ(stream.push(byte(0x99)), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(stream.flush(), "");
}

TEST_F(StreamingDetokenizerTest, EmitsCompleteTextBeforeAnUnfinishedCharacter) {
  StreamingDetokenizer stream(*tok_);
  EXPECT_EQ(stream.push(spm_.id("\xE2\x96\x81Hello")), " Hello");
  EXPECT_EQ(stream.push(byte(' ')), " ");
  EXPECT_EQ(stream.push(byte(0xC3)), "");
  EXPECT_EQ(stream.push(byte(0xA9)), "\xC3\xA9");
  EXPECT_EQ(stream.push(ToySpm::kEos), "");  // control tokens add nothing
}

TEST_F(StreamingDetokenizerTest, FlushReplacesAnUnfinishedCharacter) {
  StreamingDetokenizer stream(*tok_);
  EXPECT_EQ(stream.push(byte('a')), "a");
  EXPECT_EQ(stream.push(byte(0xE2)), "");
  EXPECT_EQ(stream.push(byte(0x82)), "");
  EXPECT_EQ(stream.flush(), kFffd);
  EXPECT_EQ(stream.flush(), "");
  EXPECT_EQ(stream.push(byte('b')), "b");  // usable again after a flush
}

TEST_F(StreamingDetokenizerTest, InvalidBytesBecomeReplacementCharactersRightAway) {
  StreamingDetokenizer stream(*tok_);
  EXPECT_EQ(stream.push(byte(0xFF)), kFffd);
  EXPECT_EQ(stream.push(byte(0x80)), kFffd);  // stray continuation byte
  EXPECT_EQ(stream.push(byte(0xE2)), "");
  EXPECT_EQ(stream.push(byte('A')), kFffd + "A");  // the started character can no longer complete
}

TEST(AppendValidUtf8Test, MaximalSubpartsBecomeOneReplacementEach) {
  auto fix = [](std::string_view in) {
    std::string out;
    EXPECT_EQ(append_valid_utf8(in, /*at_end=*/true, out), 0u);
    return out;
  };
  EXPECT_EQ(fix("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(fix("\xC0\x80"), kFffd + kFffd);                          // overlong NUL
  EXPECT_EQ(fix("\xE0\x80\x80"), kFffd + kFffd + kFffd);              // overlong, E0 needs A0..BF next
  EXPECT_EQ(fix("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // surrogate U+D800
  EXPECT_EQ(fix("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(fix("\xE2\x82x"), kFffd + "x");                           // truncated sequence, one U+FFFD
  std::string out;
  EXPECT_EQ(append_valid_utf8("a\xF0\x9F\xA6", /*at_end=*/false, out), 3u);
  EXPECT_EQ(out, "a");
}

// Property: whatever bytes arrive, every push returns valid UTF-8, and for valid input the stream
// reproduces the text exactly.
TEST_F(StreamingDetokenizerTest, RandomByteStreamsStayValid) {
  std::mt19937 rng(42);
  const std::vector<std::string> samples = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\xA6\x99", "\n", " "};
  for (int round = 0; round < 200; ++round) {
    std::string valid;
    for (int k = 0; k < 8; ++k) valid += samples[rng() % samples.size()];
    StreamingDetokenizer stream(*tok_);
    std::string out;
    for (char c : valid) {
      const std::string piece = stream.push(byte(static_cast<uint8_t>(c)));
      EXPECT_TRUE(is_valid_utf8(piece));
      out += piece;
    }
    out += stream.flush();
    EXPECT_EQ(out, valid);

    StreamingDetokenizer noisy(*tok_);
    for (int k = 0; k < 16; ++k) {
      const std::string piece = noisy.push(byte(static_cast<uint8_t>(rng() & 0xFF)));
      EXPECT_TRUE(is_valid_utf8(piece));
    }
    EXPECT_TRUE(is_valid_utf8(noisy.flush()));
  }
}

}  // namespace
}  // namespace pagoda
