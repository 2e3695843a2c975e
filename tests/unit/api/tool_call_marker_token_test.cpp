// Tool-call markers that a vocabulary holds as control tokens (Mistral's [TOOL_CALLS], Llama 3's <|python_tag|>):
// they print nothing, yet a forced call may use them (the grammar reads them as their text) and a reply that
// contains them is parsed for calls, streamed and not.
#include <gtest/gtest.h>

#include "api/openai_response.h"
#include "api/tool_calls.h"
#include "grammar/compiled_grammar.h"
#include "grammar/token_mask.h"
#include "tokenizer/toy_vocabs.h"

namespace pagoda {
namespace {

struct MarkerVocab {
  test_util::ToySpm spm;
  TokenId marker = 0, tag = 0, plain_bracket = 0;
  std::unique_ptr<Tokenizer> tok;
  MarkerVocab() {
    marker = spm.add("[TOOL_CALLS]", 0, 3);     // CONTROL
    tag = spm.add("<|python_tag|>", 0, 3);      // CONTROL
    plain_bracket = spm.add("[", -20);          // an ordinary token
    tok = test_util::must_load(spm.gguf());
  }
};

TEST(ToolCallMarkerToken, GrammarsReadMarkerControlTokensAsTheirText) {
  MarkerVocab v;
  EXPECT_EQ(v.tok->piece(v.marker), "") << "control tokens print nothing";
  EXPECT_EQ(grammar::grammar_piece(*v.tok, v.marker), "[TOOL_CALLS]");
  EXPECT_EQ(grammar::grammar_piece(*v.tok, v.tag), "<|python_tag|>");
  EXPECT_EQ(grammar::grammar_piece(*v.tok, test_util::ToySpm::kBos), "") << "other control tokens stay silent";
  EXPECT_EQ(grammar::grammar_piece(*v.tok, v.plain_bracket), "[");

  const std::vector<ToolSpec> tools = {{"f", "", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {}})")}};
  auto gbnf = tool_call_gbnf(ToolCallFormat::kMistral, tools, ToolChoice{ToolChoice::Kind::kRequired, ""}, false);
  ASSERT_TRUE(gbnf.ok());
  auto g = grammar::compile_grammar(*gbnf, *v.tok);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const auto& m = (*g)->matcher();
  const auto start = (*g)->mask(m.initial());
  EXPECT_TRUE(start->allowed(v.marker)) << "the forced call may start with the model's own marker token";
  EXPECT_TRUE(start->allowed(v.plain_bracket)) << "or spell it out";
  EXPECT_FALSE(start->allowed(v.tag));
  const auto after = m.advance(m.initial(), grammar::grammar_piece(*v.tok, v.marker));
  ASSERT_FALSE(after.dead());
  EXPECT_TRUE((*g)->mask(after)->allowed(v.plain_bracket)) << "'[' opens the list after the marker";
  EXPECT_FALSE((*g)->mask(after)->allowed(v.marker));
}

StreamEvent token_event(TokenId id, std::string text) {
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::kToken;
  ev.token = id;
  ev.text = std::move(text);
  return ev;
}

TEST(ToolCallMarkerToken, RepliesWithTheMarkerTokenAreParsedStreamedAndNot) {
  MarkerVocab v;
  // The marker as a control token (no text), then the call spelled out by ordinary tokens.
  std::vector<StreamEvent> events = {token_event(v.marker, ""), token_event(v.plain_bracket, "[{\"name\": \"f\", "),
                                     token_event(v.plain_bracket, "\"arguments\": {\"a\""),
                                     token_event(v.plain_bracket, ": 1}}]")};
  StreamEvent fin;
  fin.kind = StreamEvent::Kind::kFinished;
  fin.finish = FinishReason::kStop;
  events.push_back(fin);

  ResponseBuilder whole(ApiEndpoint::kChatCompletions, "chatcmpl-1", "m", 0, *v.tok, 1, -1);
  whole.tool_format = ToolCallFormat::kMistral;
  for (const auto& ev : events) whole.add(ev);
  const auto r = whole.final_response(3);
  const auto& choice = r["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.dump();
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_TRUE(choice["message"]["content"].is_null());

  ResponseBuilder streamed(ApiEndpoint::kChatCompletions, "chatcmpl-1", "m", 0, *v.tok, 1, -1);
  streamed.tool_format = ToolCallFormat::kMistral;
  std::string args, name, content, finish;
  int arg_chunks = 0;
  for (const auto& ev : events)
    for (const auto& chunk : streamed.chunks_for(ev)) {
      const auto& c = chunk["choices"][0];
      if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
      if (c["delta"].contains("tool_calls"))
        for (const auto& d : c["delta"]["tool_calls"]) {
          if (d["function"].contains("name")) name += d["function"]["name"].get<std::string>();
          const std::string a = d["function"]["arguments"].get<std::string>();
          if (!a.empty()) ++arg_chunks;
          args += a;
        }
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"].get<std::string>();
    }
  EXPECT_EQ(name, "f");
  EXPECT_EQ(args, R"({"a": 1})");
  EXPECT_GE(arg_chunks, 2) << "arguments stream as tokens arrive";
  EXPECT_EQ(content, "") << "the marker is not content";
  EXPECT_EQ(finish, "tool_calls");
}

}  // namespace
}  // namespace pagoda
