#include "api/chat_prompt.h"

#include <gtest/gtest.h>

#include "test_models.h"

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;

ChatPrompt jinja_prompt(const char* source) {
  auto p = ChatPrompt::jinja(source, "<s>", "</s>", "test");
  EXPECT_TRUE(p.ok()) << p.error().message;
  return std::move(*p);
}

ChatInput input_of(const char* messages) {
  ChatInput in;
  in.messages = ojson::parse(messages);
  return in;
}

TEST(ChatPrompt, JinjaGetsTheVariablesTransformersPasses) {
  const ChatPrompt p = jinja_prompt(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}>{% endif %}{{ tools is none }}{{ documents is none }}{{ eos_token }}");
  auto out = p.render(input_of(R"([{"role": "user", "content": "hi"}])"));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<s>[user:hi]>TrueTrue</s>");
  ChatInput no_prompt = input_of(R"([{"role": "user", "content": "hi"}])");
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(*p.render(no_prompt), "<s>[user:hi]TrueTrue</s>");
  EXPECT_EQ(p.describe(), "jinja (test)");
}

TEST(ChatPrompt, RequestKwargsOverrideServerKwargs) {
  ChatPrompt p = jinja_prompt("{{ a }}-{{ b }}-{{ bos_token }}");
  ASSERT_TRUE(p.set_default_kwargs(ojson::parse(R"({"a": 1, "b": 2})")).ok());
  ChatInput in = input_of("[]");
  EXPECT_EQ(*p.render(in), "1-2-<s>");
  in.kwargs = ojson::parse(R"({"b": "x", "bos_token": "<B>"})");
  EXPECT_EQ(*p.render(in), "1-x-<B>");
  // The renderer's own variables cannot be set through kwargs.
  for (const char* reserved : {"messages", "tools", "add_generation_prompt"}) {
    EXPECT_FALSE(p.set_default_kwargs(ojson{{reserved, 1}}).ok()) << reserved;
    in.kwargs = ojson{{reserved, 1}};
    auto r = p.render(in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().param, "chat_template_kwargs");
  }
  EXPECT_FALSE(p.set_default_kwargs(ojson::array()).ok());
}

TEST(ChatPrompt, TemplateErrorsNameTheConversation) {
  const ChatPrompt p = jinja_prompt(
      "{% if messages[0].role != 'user' %}{{ raise_exception('Conversation must start with user') }}{% endif %}"
      "{{ messages[0].content.upper() }}");
  auto refused = p.render(input_of(R"([{"role": "system", "content": "x"}])"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().param, "messages");
  EXPECT_NE(refused.error().message.find("Conversation must start with user"), std::string::npos);
  auto failed = p.render(input_of(R"([{"role": "user", "content": 5}])"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("UndefinedError"), std::string::npos) << failed.error().message;
  EXPECT_FALSE(p.render(input_of(R"([{"content": "no role"}])")).ok());
  EXPECT_FALSE(p.render(input_of(R"({"role": "user"})")).ok());
  EXPECT_FALSE(ChatPrompt::jinja("{% if %}", "", "", "x").ok());
}

TEST(ChatPrompt, OpenAiWireFormatIsAdaptedForJinjaTemplates) {
  const ChatPrompt plain = jinja_prompt("{% for m in messages %}{{ m.content }}{% endfor %}");
  const ojson adapted = plain.adapt_openai_messages(ojson::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"y\": 1, \"x\": [2]}"}},
      {"id": "2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]},
    {"role": "tool", "tool_call_id": "1"}])"));
  EXPECT_EQ(adapted[0]["content"], "ab");
  EXPECT_EQ(adapted[1]["content"], "");
  EXPECT_EQ(adapted[1]["tool_calls"][0]["function"]["arguments"].dump(), R"({"y":1,"x":[2]})");  // order kept
  EXPECT_EQ(adapted[1]["tool_calls"][1]["function"]["arguments"], "not json");
  EXPECT_EQ(adapted[2]["content"], "");
  // A template that reads parts itself gets them as sent.
  const ChatPrompt parts = jinja_prompt("{% for p in messages[0].content %}{{ p['text'] }}{% endfor %}");
  const ojson kept = parts.adapt_openai_messages(ojson::parse(R"([{"role": "user", "content": [{"type": "text", "text": "a"}]}])"));
  EXPECT_TRUE(kept[0]["content"].is_array());
  EXPECT_EQ(*parts.render(ChatInput{kept, nullptr, true, ojson::object()}), "a");
  // Built-in families take messages as they are.
  const ChatPrompt builtin = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  EXPECT_EQ(builtin.adapt_openai_messages(ojson::parse(R"([{"role": "user", "content": null}])"))[0]["content"],
            nullptr);
}

TEST(ChatPrompt, BuiltinFamiliesTakeOnlyRoleAndContent) {
  const ChatPrompt p = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  EXPECT_EQ(p.describe(), "built-in chatml");
  auto out = p.render(input_of(R"([{"role": "user", "content": [{"type": "text", "text": "h"}, {"type": "text", "text": "i"}]}])"));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  auto calls = p.render(input_of(R"([{"role": "assistant", "tool_calls": [{"id": "1"}]}])"));
  ASSERT_FALSE(calls.ok());
  EXPECT_NE(calls.error().message.find("tool_calls"), std::string::npos);
  ChatInput tools = input_of(R"([{"role": "user", "content": "x"}])");
  tools.tools = ojson::array();
  auto t = p.render(tools);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().param, "tools");
}

TEST(ChatPrompt, TokenizedPromptHasOneBos) {
  const Tokenizer& tok = stories260k().tokenizer();
  ASSERT_TRUE(tok.add_bos() && tok.bos());
  EXPECT_EQ(bos_token_text(tok), "<s>");
  EXPECT_EQ(eos_token_text(tok), "</s>");
  const std::vector<TokenId> with = tokenize_chat_prompt("<s>Once upon a time", tok);
  const std::vector<TokenId> without = tokenize_chat_prompt("Once upon a time", tok);
  EXPECT_EQ(with, without);
  ASSERT_GE(with.size(), 2u);
  EXPECT_EQ(with[0], *tok.bos());
  EXPECT_NE(with[1], *tok.bos());
}

}  // namespace
}  // namespace pagoda
