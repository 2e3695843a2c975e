#include "api/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_template(const std::string& family) {
  std::ifstream in(std::string(PAGODA_SHARED_DIR) + "/templates/templates/" + family + ".jinja");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ToolCalls, FormatsAreRecognisedInRealTemplates) {
  for (const char* f : {"qwen2.5-instruct", "qwen3", "qwq-32b", "hermes3-llama3.1-tool-use"})
    EXPECT_EQ(detect_tool_call_format(read_template(f)), ToolCallFormat::kHermes) << f;
  for (const char* f : {"llama3.1-instruct", "llama3.2-instruct", "llama3.3-instruct"})
    EXPECT_EQ(detect_tool_call_format(read_template(f)), ToolCallFormat::kLlama3) << f;
  for (const char* f : {"mistral-7b-instruct-v0.3", "mistral-nemo-instruct-2407"})
    EXPECT_EQ(detect_tool_call_format(read_template(f)), ToolCallFormat::kMistral) << f;
  // qwen3-coder writes its calls as XML inside <tool_call>: not the Hermes JSON format.
  EXPECT_EQ(detect_tool_call_format(read_template("qwen3-coder")), ToolCallFormat::kQwen3Coder);
  EXPECT_EQ(detect_tool_call_format(read_template("llama4-instruct")), ToolCallFormat::kLlama4);
  for (const char* f : {"llama2-chat", "zephyr-7b-beta", "gemma2-it"})
    EXPECT_EQ(detect_tool_call_format(read_template(f)), ToolCallFormat::kNone) << f;
}

TEST(ToolCalls, Llama4CallsFollowTheTemplatesOwnForm) {
  // As llama4-instruct.jinja writes an assistant's calls: <|python_start|>text<|python_end|> then the objects.
  auto r = parse_tool_calls(ToolCallFormat::kLlama4,
                            "<|python_start|><|python_end|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}"
                            "{\"name\": \"g\", \"parameters\": {}}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "f");
  EXPECT_EQ(r.calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(r.calls[1].name, "g");
  EXPECT_EQ(r.content, "");
  r = parse_tool_calls(ToolCallFormat::kLlama4, "{\"name\": \"f\", \"parameters\": {}}");
  ASSERT_EQ(r.calls.size(), 1u);
  r = parse_tool_calls(ToolCallFormat::kLlama4, "<|python_start|>Let me look.<|python_end|>{\"name\": \"f\", \"parameters\": {}}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.content, "Let me look.");
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kLlama4, "{\"name\": \"f\", \"parameters\": {}} and more").calls.empty());
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kLlama4, "Hello there").content, "Hello there");
  bool decided = false;
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama4, "<|python_st", &decided), 0u);
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama4, "Sure", &decided), 4u);
}

TEST(ToolCalls, Qwen3CoderXmlCallsAreTypedByTheToolsSchemas) {
  auto tools = read_tools(ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
       "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}])"));
  ASSERT_TRUE(tools.ok());
  const std::string reply = "I will check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n"
                            "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  auto r = parse_tool_calls(ToolCallFormat::kQwen3Coder, reply, &*tools);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(ojson::parse(r.calls[0].arguments), ojson::parse(R"({"city": "42", "days": 3})"))
      << "a string parameter stays a string even when it looks like a number";
  EXPECT_EQ(r.content, "I will check.");
  // Without the schemas a value that parses as JSON is JSON.
  EXPECT_EQ(ojson::parse(parse_tool_calls(ToolCallFormat::kQwen3Coder, reply).calls[0].arguments)["city"], 42);
  // A malformed block stays content; content before a call streams, the call is held.
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kQwen3Coder, "<tool_call>\n<function=f>\n</tool_call>").calls.empty());
  bool decided = false;
  EXPECT_EQ(releasable_content(ToolCallFormat::kQwen3Coder, "Hi <tool_c", &decided), 3u);
  // The forced-call grammar: required parameters, raw strings without '<', enums as their strings.
  auto required = read_tool_choice(ojson("required"), *tools);
  auto gbnf = tool_call_gbnf(ToolCallFormat::kQwen3Coder, *tools, *required, true);
  ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
  auto g = grammar::parse_gbnf(*gbnf);
  ASSERT_TRUE(g.ok()) << g.error().message << "\n" << *gbnf;
  grammar::GrammarMatcher m(*g);
  EXPECT_TRUE(m.accepts("<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
                        "<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(m.accepts(reply.substr(reply.find("<tool_call>")))) << "the reply above";
  EXPECT_FALSE(m.accepts("<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"))
      << "city is required";
  EXPECT_FALSE(m.accepts("<tool_call>\n<function=get_weather>\n<parameter=city>\nx\n</parameter>\n"
                         "<parameter=unit>\nkelvin\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(m.accepts("<tool_call>\n<function=get_weather>\n<parameter=city>\nx\n</parameter>\n"
                         "<parameter=days>\n\"3\"\n</parameter>\n</function>\n</tool_call>")) << "days is an integer";
}

TEST(ToolCalls, RepliesAreParsedPerFormat) {
  auto h = parse_tool_calls(ToolCallFormat::kHermes,
                            "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
                            "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_ca");
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[0].name, "f");
  EXPECT_EQ(h.calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(h.calls[1].name, "g");  // cut off inside the closing tag: the call is complete
  EXPECT_EQ(h.content, "Let me check.");
  auto bad = parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": 3}</tool_call>");
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "<tool_call>{\"name\": 3}</tool_call>");
  auto l = parse_tool_calls(ToolCallFormat::kLlama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": \"b\"}}");
  ASSERT_EQ(l.calls.size(), 1u);
  EXPECT_EQ(l.calls[0].arguments, R"({"a":"b"})");
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kLlama3, "{\"just\": \"json\"}").calls.empty());
  auto m = parse_tool_calls(ToolCallFormat::kMistral, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, "
                                                      "{\"name\": \"g\", \"arguments\": \"{\\\"y\\\": 2}\"}]");
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[1].arguments, R"({"y": 2})");
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kMistral, "plain text").content, "plain text");
}

TEST(ToolCalls, StreamingReleasesOnlyWhatCannotBeACall) {
  bool decided = false;
  EXPECT_EQ(releasable_content(ToolCallFormat::kHermes, "Hello <tool", &decided), 6u);
  EXPECT_EQ(releasable_content(ToolCallFormat::kHermes, "Hello <tool_call>{", &decided), 6u);
  EXPECT_EQ(releasable_content(ToolCallFormat::kHermes, "Hello <b>", &decided), 9u);
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama3, "  ", &decided), 0u);
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama3, " {\"na", &decided), 0u);
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama3, "<|pyth", &decided), 0u);
  EXPECT_FALSE(decided);
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama3, "Sure", &decided), 4u);
  EXPECT_TRUE(decided);
  EXPECT_EQ(releasable_content(ToolCallFormat::kLlama3, "Sure {", &decided), 6u);
}

TEST(ToolCalls, ForcedCallGrammarsAcceptExactlyWellFormedCalls) {
  auto tools = read_tools(ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "ping"}}])"));
  ASSERT_TRUE(tools.ok()) << tools.error().message;
  auto required = read_tool_choice(ojson("required"), *tools);
  ASSERT_TRUE(required.ok());
  auto check = [&](ToolCallFormat f, const ToolChoice& c, bool parallel, const char* text, bool want) {
    auto gbnf = tool_call_gbnf(f, *tools, c, parallel);
    ASSERT_TRUE(gbnf.ok()) << gbnf.error().message;
    auto g = grammar::parse_gbnf(*gbnf);
    ASSERT_TRUE(g.ok()) << g.error().message << "\n" << *gbnf;
    EXPECT_EQ(grammar::GrammarMatcher(*g).accepts(text), want) << tool_call_format_name(f) << ": " << text;
  };
  check(ToolCallFormat::kHermes, *required, true,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>", true);
  check(ToolCallFormat::kHermes, *required, false,
        "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"ping\", "
        "\"arguments\": {}}\n</tool_call>", false);
  check(ToolCallFormat::kHermes, *required, true,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>", false);
  auto named = read_tool_choice(ojson::parse(R"({"type": "function", "function": {"name": "ping"}})"), *tools);
  ASSERT_TRUE(named.ok());
  check(ToolCallFormat::kLlama3, *named, false, "{\"name\": \"ping\", \"parameters\": {}}", true);
  check(ToolCallFormat::kLlama3, *named, false, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"x\"}}", false);
  check(ToolCallFormat::kMistral, *required, true,
        "[TOOL_CALLS][{\"name\": \"ping\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": "
        "{\"city\": \"Rome\", \"days\": 3}}]", true);
}

TEST(ToolCalls, BadToolsAndChoicesAreNamed) {
  for (const char* bad : {R"({})", R"([{"type": "function"}])", R"([{"type": "code_interpreter"}])",
                          R"([{"type": "function", "function": {"name": ""}}])",
                          R"([{"type": "function", "function": {"name": "f", "parameters": []}}])",
                          R"([{"type": "function", "function": {"name": "f", "extra": 1}}])",
                          R"([{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}])"}) {
    auto r = read_tools(ojson::parse(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().param, "tools");
  }
  auto tools = read_tools(ojson::parse(R"([{"type": "function", "function": {"name": "f"}}])"));
  ASSERT_TRUE(tools.ok());
  for (const char* bad : {R"("sometimes")", R"({"type": "function", "function": {"name": "g"}})", R"(3)"}) {
    auto c = read_tool_choice(ojson::parse(bad), *tools);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.error().param, "tool_choice");
  }
  EXPECT_FALSE(read_tool_choice(ojson("required"), {}).ok());
  EXPECT_EQ(tool_call_id(ToolCallFormat::kMistral, "chatcmpl-1", 0, 0).size(), 9u);
  EXPECT_NE(tool_call_id(ToolCallFormat::kHermes, "chatcmpl-1", 0, 0), tool_call_id(ToolCallFormat::kHermes, "chatcmpl-1", 0, 1));
}

}  // namespace
}  // namespace pagoda
