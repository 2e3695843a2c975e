#include "api/chat_session.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_models.h"

namespace pagoda {
namespace {

GenerateOptions greedy(int64_t max_new_tokens) {
  GenerateOptions o;
  o.max_new_tokens = max_new_tokens;
  o.sampling.temperature = 0;
  return o;
}

// The tokens a fresh runner generates for the whole prompt (the plain path, nothing reused).
std::vector<int32_t> fresh_reply(const std::vector<int32_t>& prompt, int64_t n_ctx, int64_t max_new_tokens) {
  ThreadPool pool(2);
  SequenceRunner runner(stories260k(), pool, n_ctx);
  auto ids = generate(runner, prompt, greedy(max_new_tokens), nullptr);
  EXPECT_TRUE(ids.ok()) << ids.error().message;
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(ChatSession, LaterTurnsReuseTheCachedPrefixAndGiveAFreshRunnersTokens) {
  ThreadPool pool(2);
  SequenceRunner runner(stories260k(), pool, 512);
  const ChatPrompt prompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  ChatSession session(runner, prompt, nlohmann::ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}}));
  std::string streamed;
  auto first = session.reply("Once upon a time", greedy(12), [&](std::string_view s) { streamed += s; });
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->reused, 0);
  EXPECT_EQ(streamed, first->text);
  EXPECT_FALSE(first->text.empty());
  EXPECT_EQ(first->ids, fresh_reply(first->prompt_ids, 512, 12));

  for (const char* message : {"there was a cat.", "The end?"}) {
    auto turn = session.reply(message, greedy(12));
    ASSERT_TRUE(turn.ok()) << turn.error().message;
    // The previous prompt is a prefix of this one, so at least its K/V were kept, and only the rest was evaluated.
    ASSERT_GE(turn->prompt_ids.size(), first->prompt_ids.size());
    EXPECT_TRUE(std::equal(first->prompt_ids.begin(), first->prompt_ids.end(), turn->prompt_ids.begin()));
    EXPECT_GE(turn->reused, static_cast<int64_t>(first->prompt_ids.size()));
    EXPECT_LT(turn->reused, static_cast<int64_t>(turn->prompt_ids.size()));
    EXPECT_EQ(turn->ids, fresh_reply(turn->prompt_ids, 512, 12)) << message;
    first = std::move(turn);
  }
  const auto& m = session.messages();
  ASSERT_EQ(m.size(), 7u);  // system, then three user / assistant exchanges
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[5]["content"], "The end?");
  EXPECT_EQ(m[6]["role"], "assistant");
  EXPECT_EQ(m[6]["content"], first->text);
}

TEST(ChatSession, DropsTheEarliestExchangesWhenTheContextIsFullAndKeepsTheSystemMessage) {
  ThreadPool pool(2);
  const int64_t n_ctx = 200, max_new = 16;
  SequenceRunner runner(stories260k(), pool, n_ctx);
  const ChatPrompt prompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  ChatSession session(runner, prompt,
                      nlohmann::ordered_json::array({{{"role", "system"}, {"content", "Tell stories."}}}));
  int dropped = 0;
  for (int t = 0; t < 8; ++t) {
    auto turn = session.reply("Tell me about the little girl and her dog in the park.", greedy(max_new));
    ASSERT_TRUE(turn.ok()) << t << ": " << turn.error().message;
    EXPECT_LE(static_cast<int64_t>(turn->prompt_ids.size()) + max_new, n_ctx);
    EXPECT_EQ(turn->ids, fresh_reply(turn->prompt_ids, n_ctx, max_new)) << "turn " << t;
    dropped += turn->dropped_messages;
    EXPECT_EQ(session.messages()[0]["role"], "system");
    EXPECT_EQ(session.messages()[1]["role"], "user");  // whole exchanges go
  }
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(dropped % 2, 0);
}

TEST(ChatSession, AMessageThatCannotFitIsAnErrorAndTheConversationStaysAsItWas) {
  ThreadPool pool(2);
  SequenceRunner runner(stories260k(), pool, 64);
  const ChatPrompt prompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  ChatSession session(runner, prompt);
  auto ok = session.reply("Hi", greedy(4));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  const nlohmann::ordered_json before = session.messages();
  std::string long_message;
  for (int i = 0; i < 40; ++i) long_message += "a dog ran. ";
  auto turn = session.reply(long_message, greedy(4));
  ASSERT_FALSE(turn.ok());
  EXPECT_NE(turn.error().message.find("more than the context size of 64"), std::string::npos) << turn.error().message;
  EXPECT_EQ(session.messages(), before);
  // The session still works, and still reuses what the runner holds.
  auto next = session.reply("Bye", greedy(4));
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_GT(next->reused, 0);
  EXPECT_EQ(next->ids, fresh_reply(next->prompt_ids, 64, 4));
}

// A later turn's penalties see the whole conversation's prompt, the part kept in the cache included: its reply is
// a fresh runner's over the same prompt.
TEST(ChatSession, PenalizedTurnsGiveAFreshRunnersTokens) {
  ThreadPool pool(2);
  SequenceRunner runner(stories260k(), pool, 512);
  const ChatPrompt prompt = ChatPrompt::builtin(ChatTemplateFamily::kChatml);  // outlives the session
  ChatSession session(runner, prompt, nlohmann::ordered_json::array());
  GenerateOptions o = greedy(16);
  o.sampling.repetition_penalty = 1.5f;
  o.sampling.frequency_penalty = 0.5f;
  ASSERT_TRUE(session.reply("Once upon a time", o).ok());
  auto turn = session.reply("there was a cat.", o);
  ASSERT_TRUE(turn.ok()) << turn.error().message;
  ASSERT_GT(turn->reused, 0);
  SequenceRunner fresh(stories260k(), pool, 512);
  auto ids = generate(fresh, turn->prompt_ids, o, nullptr);
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(turn->ids, *ids);
}

TEST(GenerateAfter, RejectsACachedCountTheRunnerDoesNotHold) {
  ThreadPool pool(1);
  SequenceRunner runner(stories260k(), pool, 64);
  const std::vector<int32_t> prompt = {1, 400, 401, 402};
  EXPECT_FALSE(generate_after(runner, prompt, 2, greedy(2), nullptr).ok());  // the runner is empty
  ASSERT_TRUE(generate_after(runner, prompt, 0, greedy(2), nullptr).ok());
  EXPECT_FALSE(generate_after(runner, prompt, 4, greedy(2), nullptr).ok());  // the last token must be evaluated
  EXPECT_TRUE(generate_after(runner, prompt, 3, greedy(2), nullptr).ok());
}

}  // namespace
}  // namespace pagoda
