#include "api/generic_tool_format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "api/openai_request.h"
#include "api/openai_response.h"
#include "api/tool_call_stream.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "test_models.h"

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

std::vector<ToolSpec> weather_tools() {
  auto tools = read_tools(ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters":
      {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "ping"}}])"));
  EXPECT_TRUE(tools.ok());
  return *tools;
}

TEST(GenericToolFormat, GrammarAcceptsCallsOrAMessageAndNothingElse) {
  const auto tools = weather_tools();
  auto accepts = [&](ToolChoice choice, bool parallel, const char* text) {
    auto gbnf = tool_call_gbnf(ToolCallFormat::kGeneric, tools, choice, parallel);
    EXPECT_TRUE(gbnf.ok());
    auto g = grammar::parse_gbnf(*gbnf);
    EXPECT_TRUE(g.ok()) << g.error().message << "\n" << *gbnf;
    return grammar::GrammarMatcher(*g).accepts(text);
  };
  const ToolChoice automatic;
  const ToolChoice required{ToolChoice::Kind::kRequired, ""};
  const ToolChoice named{ToolChoice::Kind::kNamed, "ping"};
  EXPECT_TRUE(accepts(automatic, true, R"({"response": "Hello \"you\"\n"})"));
  EXPECT_TRUE(accepts(automatic, true,
                      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "ping", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(automatic, false,
                       R"({"tool_calls": [{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(automatic, true, R"({"tool_calls": [{"name": "get_weather", "arguments": {}}]})"))
      << "a required argument is missing";
  EXPECT_FALSE(accepts(automatic, true, "Hello"));
  EXPECT_FALSE(accepts(required, true, R"({"response": "Hello"})")) << "\"required\" leaves no message branch";
  EXPECT_TRUE(accepts(named, false, R"({"tool_calls": [{"name": "ping", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(named, false, R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "x"}}]})"));
}

TEST(GenericToolFormat, RepliesParseIntoCallsOrContent) {
  ParsedReply r = parse_generic_reply(R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(r.calls[0].arguments), json::parse(R"({"city": "Oslo"})"));
  EXPECT_EQ(r.content, "");
  r = parse_generic_reply(R"({"response": "It is \u00e9t\u00e9 \ud83d\ude00\n"})");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "It is \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80\n");
  // Cut off by max_tokens: the calls that closed, or the message as far as it went.
  r = parse_generic_reply(R"({"tool_calls": [{"name": "ping", "arguments": {}}, {"name": "get_w)");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "ping");
  r = parse_generic_reply(R"({"response": "Hello wor)");
  EXPECT_EQ(r.content, "Hello wor");
  EXPECT_EQ(parse_generic_reply("plain words").content, "plain words");
}

TEST(GenericToolFormat, StreamedMessageDecodesAsFarAsItGoes) {
  EXPECT_EQ(generic_response_text(R"({"response": "a\)"), "a") << "an escape cut in half waits";
  EXPECT_EQ(generic_response_text(R"({"response": "a\n)"), "a\n");
  EXPECT_EQ(generic_response_text(R"({"response": "\ud83d)"), "") << "half a surrogate pair waits";
  EXPECT_EQ(generic_response_text(R"({"response": "x\ud83d\ude00)"), "x\xf0\x9f\x98\x80");
  EXPECT_EQ(generic_response_text(R"({"response": "done"} )"), "done");
  EXPECT_EQ(generic_response_text(R"({"tool_calls": [)"), "");
  // Each prefix of a reply decodes to a prefix of the whole message.
  const std::string reply = R"({"response": "Line\none \"q\" \u00e9 end"})";
  std::string last;
  for (size_t n = 0; n <= reply.size(); ++n) {
    const std::string now = generic_response_text(reply.substr(0, n));
    EXPECT_EQ(now.compare(0, last.size(), last), 0) << n;
    last = now;
  }
  EXPECT_EQ(last, "Line\none \"q\" \xc3\xa9 end");
}

TEST(GenericToolFormat, CallsStreamAsTheyForm) {
  const std::string reply = R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}, {"name": "ping", "arguments": {}}]})";
  ToolCallStream stream(ToolCallFormat::kGeneric, true);
  std::vector<ToolCallDelta> all;
  for (size_t n = 1; n <= reply.size(); ++n)
    for (auto& d : stream.update(std::string_view(reply).substr(0, n))) all.push_back(d);
  for (auto& d : stream.finish(reply, parse_generic_reply(reply))) all.push_back(d);
  std::vector<std::string> names, args(2);
  for (const auto& d : all) {
    if (d.header) names.push_back(d.name);
    args[static_cast<size_t>(d.index)] += d.arguments;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "ping"}));
  EXPECT_EQ(args[0], R"({"city": "Oslo"})");
  EXPECT_EQ(args[1], "{}");
}

TEST(GenericToolFormat, HistoryBecomesTextEveryTemplateRenders) {
  const ojson messages = ojson::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo and Rome?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
      {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "5 C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "20 C"},
    {"role": "assistant", "content": "Cold and warm."},
    {"role": "user", "content": "Thanks"}])");
  const ojson out = generic_tool_messages(messages, "TOOLS", true, true);
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0], ojson::parse(R"({"role": "system", "content": "Be brief.\n\nTOOLS"})"));
  EXPECT_EQ(out[2]["role"], "assistant");
  EXPECT_EQ(ojson::parse(out[2]["content"].get<std::string>()),
            ojson::parse(R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}},
                                             {"name": "get_weather", "arguments": {"city": "Rome"}}]})"));
  EXPECT_EQ(out[3]["role"], "user") << "both results in one user turn";
  EXPECT_EQ(out[3]["content"], "{\"tool_response\":{\"tool_call_id\":\"call_1\",\"content\":\"5 C\"}}\n"
                               "{\"tool_response\":{\"tool_call_id\":\"call_2\",\"content\":\"20 C\"}}");
  EXPECT_EQ(out[4]["content"], R"({"response":"Cold and warm."})");
  EXPECT_EQ(out[5]["content"], "Thanks");
  for (const auto& m : out) EXPECT_EQ(m.size(), 2u) << m.dump() << ": role and content only";
  // Without a system turn the instructions open the first user message.
  const ojson no_system = generic_tool_messages(messages, "TOOLS", false, true);
  EXPECT_EQ(no_system[0]["role"], "user");
  EXPECT_EQ(no_system[0]["content"], "Be brief.\n\nTOOLS\n\nWeather in Oslo and Rome?");
}

TEST(GenericToolFormat, ChatRequestWithoutATemplateFormatUsesIt) {
  // stories260K with the built-in ChatML: no tool-call format of its own.
  const Tokenizer& tok = stories260k().tokenizer();
  auto r = parse_chat_request(json::parse(R"({"messages": [{"role": "user", "content": "Weather?"}],
      "tools": [{"type": "function", "function": {"name": "ping"}}]})"), tok, ApiLimits{4096, {}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tool_format, ToolCallFormat::kGeneric);
  ASSERT_NE(r->gen.grammar, nullptr) << "auto is held to the reply schema too";
  const std::string prompt = tok.decode(r->gen.prompt);
  EXPECT_NE(prompt.find("<|im_start|>system\nYou can call these tools:"), std::string::npos) << prompt;
  // tool_choice none: the tools are shown, but no grammar and no parsing; history still renders.
  r = parse_chat_request(json::parse(R"({"messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c", "content": "pong"}],
      "tools": [{"type": "function", "function": {"name": "ping"}}], "tool_choice": "none"})"), tok, ApiLimits{4096, {}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tool_format, ToolCallFormat::kNone);
  EXPECT_EQ(r->gen.grammar, nullptr);
  EXPECT_NE(tok.decode(r->gen.prompt).find("{\"tool_response\":{\"tool_call_id\":\"c\",\"content\":\"pong\"}}"),
            std::string::npos);
  EXPECT_NE(tok.decode(r->gen.prompt).find("Do not call a tool in this reply"), std::string::npos);
  // A constraint beside auto tools under the generic format is refused by name.
  auto both = parse_chat_request(json::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "ping"}}], "response_format": {"type": "json_object"}})"),
                                 tok, ApiLimits{4096, {}});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().param, "response_format");
}

TEST(GenericToolFormat, ResponsesCarryCallsAndStreamTheMessage) {
  const Tokenizer& tok = stories260k().tokenizer();
  auto events_for = [&](const std::string& text) {
    std::vector<StreamEvent> evs;
    // One event per few bytes: the text as tokens would bring it.
    for (size_t i = 0; i < text.size(); i += 3) {
      StreamEvent ev;
      ev.kind = StreamEvent::Kind::kToken;
      ev.index = 0;
      ev.token = 300;
      ev.text = text.substr(i, 3);
      evs.push_back(ev);
    }
    StreamEvent fin;
    fin.kind = StreamEvent::Kind::kFinished;
    fin.index = 0;
    fin.finish = FinishReason::kStop;
    evs.push_back(fin);
    return evs;
  };
  for (const bool calls : {false, true}) {
    const std::string text = calls ? R"({"tool_calls": [{"name": "ping", "arguments": {"n": 1}}]})"
                                   : R"({"response": "Hi \"there\"\n"})";
    ResponseBuilder whole(ApiEndpoint::kChatCompletions, "chatcmpl-1", "m", 0, tok, 1, -1);
    whole.tool_format = ToolCallFormat::kGeneric;
    ResponseBuilder streamed = whole;
    std::string content, args;
    std::string finish;
    for (const StreamEvent& ev : events_for(text)) {
      whole.add(ev);
      for (const json& chunk : streamed.chunks_for(ev)) {
        const json& c = chunk["choices"][0];
        if (c["delta"].contains("content") && c["delta"]["content"].is_string()) content += c["delta"]["content"];
        if (c["delta"].contains("tool_calls"))
          for (const json& d : c["delta"]["tool_calls"]) args += d["function"]["arguments"].get<std::string>();
        if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      }
    }
    const json message = whole.final_response(5)["choices"][0]["message"];
    if (calls) {
      EXPECT_EQ(message["content"], nullptr);
      EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "ping");
      EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"n": 1})");
      EXPECT_EQ(args, R"({"n": 1})");
      EXPECT_EQ(finish, "tool_calls");
      EXPECT_EQ(content, "");
    } else {
      EXPECT_EQ(message["content"], "Hi \"there\"\n");
      EXPECT_FALSE(message.contains("tool_calls"));
      EXPECT_EQ(content, "Hi \"there\"\n");
      EXPECT_EQ(finish, "stop");
    }
  }
}

}  // namespace
}  // namespace pagoda
