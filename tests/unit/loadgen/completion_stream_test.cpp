#include "loadgen/completion_stream.h"

#include <gtest/gtest.h>

namespace pagoda::loadgen {
namespace {

std::string chunk(const std::string& text, const std::string& finish = "null") {
  return "data: {\"choices\":[{\"text\":\"" + text + "\",\"index\":0,\"finish_reason\":" + finish + "}]}\n\n";
}

TEST(CompletionStream, TimesTokenChunksAndTakesTheCountFromUsage) {
  CompletionStream s;
  ASSERT_TRUE(s.feed(chunk("Once"), 0.100).ok());
  ASSERT_TRUE(s.feed(chunk(""), 0.110).ok());  // a token whose text is held back still counts
  ASSERT_TRUE(s.feed(chunk(" upon"), 0.125).ok());
  // llama-server's closing chunk: no text, a finish_reason: not a token. OpenAI's usage chunk: no choices.
  ASSERT_TRUE(s.feed(chunk("", "\"length\""), 0.126).ok());
  ASSERT_TRUE(s.feed("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,"
                    "\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n",
                    0.127)
                  .ok());
  EXPECT_FALSE(s.done());
  ASSERT_TRUE(s.feed("data: [DONE]\n\n", 0.128).ok());
  EXPECT_TRUE(s.done());
  RequestRecord r;
  ASSERT_TRUE(s.finish(0.130, r).ok());
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.100);
  EXPECT_DOUBLE_EQ(r.e2e_s, 0.130);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.010, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.015, 1e-12);
  EXPECT_EQ(r.output_tokens, 4);  // usage wins over the 3 chunks seen
  EXPECT_EQ(r.reported_prompt_tokens, 5);
  EXPECT_EQ(r.cached_prompt_tokens, 16);
  EXPECT_NEAR(*r.tpot_s(), 0.030 / 3, 1e-12);
}

TEST(CompletionStream, CountsChunksWithoutUsageAndALastChunkWithText) {
  CompletionStream s;
  ASSERT_TRUE(s.feed(chunk("a") + chunk("b") + chunk("c", "\"length\"") + "data: [DONE]\n\n", 0.5).ok());
  RequestRecord r;
  ASSERT_TRUE(s.finish(0.5, r).ok());
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_FALSE(r.reported_prompt_tokens);
  EXPECT_FALSE(r.cached_prompt_tokens);
  EXPECT_EQ(r.itl_s.size(), 2u);
}

TEST(CompletionStream, MalformedOrErrorEventsFail) {
  CompletionStream a;
  const Status bad = a.feed("data: {not json\n\n", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("malformed stream event: {not json"), std::string::npos);
  CompletionStream b;
  const Status err = b.feed("data: {\"error\":{\"message\":\"context overflow\",\"code\":400}}\n\n", 0);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message, "error event: context overflow");
}

TEST(CompletionStream, IncompleteStreamsFail) {
  RequestRecord r;
  CompletionStream no_done;
  ASSERT_TRUE(no_done.feed(chunk("a"), 0.1).ok());
  EXPECT_FALSE(no_done.finish(0.2, r).ok());
  CompletionStream no_token;
  ASSERT_TRUE(no_token.feed("data: [DONE]\n\n", 0.1).ok());
  EXPECT_FALSE(no_token.finish(0.2, r).ok());
}

TEST(RequestRecord, TpotNeedsTwoTokensAndSuccess) {
  RequestRecord r;
  r.ttft_s = 1;
  r.e2e_s = 2;
  r.output_tokens = 1;
  EXPECT_FALSE(r.tpot_s());
  r.output_tokens = 11;
  EXPECT_DOUBLE_EQ(*r.tpot_s(), 0.1);
  r.error = "x";
  EXPECT_FALSE(r.tpot_s());
}

}  // namespace
}  // namespace pagoda::loadgen
