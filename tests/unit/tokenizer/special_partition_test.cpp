#include "tokenizer/special_partition.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

// Renders fragments as "[id]" for tokens and "'text'" for plain text, for readable expectations.
std::string render(std::string_view text, const std::vector<TextFragment>& frags) {
  std::string out;
  for (const auto& f : frags) {
    if (f.token) {
      out += "[" + std::to_string(*f.token) + "]";
    } else {
      EXPECT_GT(f.length, 0u);
      out += "'" + std::string(text.substr(f.offset, f.length)) + "'";
    }
  }
  return out;
}

class SpecialPartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 0 "<s>" control, 1 "<|im_start|>" control, 2 "<tool>" user-defined, 3 "<|im" user-defined (a prefix of 1),
    // 4 "<r>" user-defined with RSTRIP, 5 "<l>" user-defined with LSTRIP, 6 "x" normal.
    auto v = Vocab::from_tokens({"<s>", "<|im_start|>", "<tool>", "<|im", "<r>", "<l>", "x"}, {},
                                {TokenAttr::kControl, TokenAttr::kControl, TokenAttr::kUserDefined,
                                 TokenAttr::kUserDefined, TokenAttr::kUserDefined | TokenAttr::kRstrip,
                                 TokenAttr::kUserDefined | TokenAttr::kLstrip, TokenAttr::kNormal});
    ASSERT_TRUE(v.ok());
    vocab_ = std::move(*v);
  }
  std::string run(std::string_view text, bool parse_special) {
    return render(text, partition_special_tokens(text, order_, vocab_, parse_special));
  }
  Vocab vocab_;
  std::vector<TokenId> order_ = {1, 2, 3, 0, 4, 5};  // longest first
};

TEST_F(SpecialPartitionTest, ControlTokensOnlyWithParseSpecial) {
  EXPECT_EQ(run("a<s>b", true), "'a'[0]'b'");
  EXPECT_EQ(run("a<s>b", false), "'a<s>b'");
  EXPECT_EQ(run("<s><s>", true), "[0][0]");
}

TEST_F(SpecialPartitionTest, UserDefinedTokensAlways) {
  EXPECT_EQ(run("a<tool>b<tool>", false), "'a'[2]'b'[2]");
  EXPECT_EQ(run("<tool>", true), "[2]");
}

TEST_F(SpecialPartitionTest, LongerTokensWin) {
  EXPECT_EQ(run("<|im_start|>hi", true), "[1]'hi'");
  // Without parse_special the control token is skipped and its user-defined prefix matches instead.
  EXPECT_EQ(run("<|im_start|>hi", false), "[3]'_start|>hi'");
}

TEST_F(SpecialPartitionTest, StripAttributesSwallowAsciiWhitespace) {
  EXPECT_EQ(run("a <r>  \n b", false), "'a '[4]'b'");
  EXPECT_EQ(run("a \t<l> b", false), "'a'[5]' b'");
  EXPECT_EQ(run("<r>   ", false), "[4]");
  // Non-ASCII whitespace (U+3000) is not stripped, as with C isspace.
  EXPECT_EQ(run("<r>\xE3\x80\x80x", false), "[4]'\xE3\x80\x80x'");
}

TEST_F(SpecialPartitionTest, EmptyAndPlainText) {
  EXPECT_EQ(run("", true), "");
  EXPECT_EQ(run("plain", true), "'plain'");
}

}  // namespace
}  // namespace pagoda
