// localai/chat_deltas: OpenAI chat chunks (as ResponseBuilder streams them) -> LocalAI's ChatDelta.
#include "localai/chat_deltas.h"

#include <gtest/gtest.h>

namespace pagoda::localai {
namespace {

using json = nlohmann::json;

TEST(LocalAiChatDeltas, ContentAndToolCallsCarryOver) {
  const json chunk = {{"choices", {{{"index", 0},
                                    {"delta",
                                     {{"content", "Sure."},
                                      {"tool_calls",
                                       {{{"index", 1}, {"id", "call_1"}, {"type", "function"},
                                         {"function", {{"name", "get_weather"}, {"arguments", "{\"ci"}}}}}}}}}}}};
  const auto deltas = chat_deltas_of(chunk);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].content(), "Sure.");
  ASSERT_EQ(deltas[0].tool_calls_size(), 1);
  EXPECT_EQ(deltas[0].tool_calls(0).index(), 1);
  EXPECT_EQ(deltas[0].tool_calls(0).id(), "call_1");
  EXPECT_EQ(deltas[0].tool_calls(0).name(), "get_weather");
  EXPECT_EQ(deltas[0].tool_calls(0).arguments(), "{\"ci");
}

TEST(LocalAiChatDeltas, AnArgumentsFragmentHasNoName) {
  const json chunk = {{"choices", {{{"delta", {{"tool_calls", {{{"index", 0}, {"function", {{"arguments", "ty\"}"}}}}}}}}}}}};
  const auto deltas = chat_deltas_of(chunk);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].tool_calls(0).name(), "");
  EXPECT_EQ(deltas[0].tool_calls(0).arguments(), "ty\"}");
}

TEST(LocalAiChatDeltas, RoleOnlyAndFinishChunksGiveNone) {
  EXPECT_TRUE(chat_deltas_of({{"choices", {{{"delta", {{"role", "assistant"}, {"content", ""}}}}}}}).empty());
  EXPECT_TRUE(chat_deltas_of({{"choices", {{{"delta", json::object()}, {"finish_reason", "tool_calls"}}}}}).empty());
  EXPECT_TRUE(chat_deltas_of({{"choices", json::array()}}).empty());
  EXPECT_TRUE(chat_deltas_of(json::object()).empty());
}

}  // namespace
}  // namespace pagoda::localai
