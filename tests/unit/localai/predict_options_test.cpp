// localai/predict_options: LocalAI's PredictOptions -> pagoda's GenerationRequest (stories260K's tokenizer).
#include "localai/predict_options.h"

#include <gtest/gtest.h>

#include "api/chat_prompt.h"
#include "test_models.h"

namespace pagoda::localai {
namespace {

const ChatPrompt& chatml() {
  static const ChatPrompt p = ChatPrompt::builtin(ChatTemplateFamily::kChatml);
  return p;
}

ApiLimits limits() { return ApiLimits{512, &chatml(), -1}; }

backend::PredictOptions prompt_options(const std::string& prompt) {
  backend::PredictOptions o;
  o.set_prompt(prompt);
  o.set_tokens(8);
  o.set_temperature(0);
  o.set_seed(7);
  return o;
}

Result<OpenAiRequest> convert(const backend::PredictOptions& o) {
  return generation_request_for(o, stories260k().tokenizer(), limits());
}

// The error must name `field`, in Error::param and in the message.
void expect_refused(const backend::PredictOptions& o, const std::string& field) {
  auto r = convert(o);
  ASSERT_FALSE(r.ok()) << "accepted; expected a refusal naming " << field;
  EXPECT_EQ(r.error().param, field) << r.error().message;
  EXPECT_NE(r.error().message.find("'" + field), std::string::npos) << r.error().message;
}

TEST(LocalAiPredictOptions, PromptIsTokenizedAsTheCompletionsEndpointDoes) {
  auto r = convert(prompt_options("Once upon a time"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->endpoint, ApiEndpoint::kCompletions);
  EXPECT_EQ(r->gen.prompt, stories260k().tokenizer().encode("Once upon a time", true, true));
  EXPECT_EQ(r->gen.max_tokens, 8);
  EXPECT_EQ(r->gen.sampling.temperature, 0.0f);
  ASSERT_TRUE(r->gen.seed.has_value());
  EXPECT_EQ(*r->gen.seed, 7u);
}

TEST(LocalAiPredictOptions, SamplingFieldsMapOneToOne) {
  auto o = prompt_options("Hi");
  o.set_temperature(0.5f);
  o.set_topk(12);
  o.set_topp(0.75f);
  o.set_minp(0.1f);
  o.set_penalty(1.3f);
  o.set_frequencypenalty(0.25f);
  o.set_presencepenalty(0.5f);
  o.set_ignoreeos(true);
  o.add_stopprompts("\n\n");
  o.add_stopprompts("END");
  o.set_logitbias("{\"5\": -100}");
  o.set_correlationid("req-42");
  auto r = convert(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FLOAT_EQ(r->gen.sampling.temperature, 0.5f);
  EXPECT_EQ(r->gen.sampling.top_k, 12);
  EXPECT_FLOAT_EQ(r->gen.sampling.top_p, 0.75f);
  EXPECT_FLOAT_EQ(r->gen.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r->gen.sampling.repetition_penalty, 1.3f);
  EXPECT_FLOAT_EQ(r->gen.sampling.frequency_penalty, 0.25f);
  EXPECT_FLOAT_EQ(r->gen.sampling.presence_penalty, 0.5f);
  EXPECT_TRUE(r->gen.ignore_eos);
  EXPECT_EQ(r->gen.stop, (std::vector<std::string>{"\n\n", "END"}));
  ASSERT_EQ(r->gen.sampling.logit_bias.size(), 1u);
  EXPECT_EQ(r->gen.sampling.logit_bias[0].first, 5);
  EXPECT_EQ(r->gen.id, "req-42");
}

TEST(LocalAiPredictOptions, ZerosMeanOffAsInLlamaCppsBackend) {
  auto o = prompt_options("Hi");
  o.set_tokens(0);
  o.set_topp(0);
  o.set_topk(0);
  o.set_penalty(0);
  o.set_typicalp(1);  // LocalAI's neutral values are accepted
  o.set_tailfreesamplingz(1);
  o.set_repeat(64);  // without a Penalty, repeat_last_n means nothing
  auto r = convert(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gen.max_tokens, 512 - static_cast<int64_t>(r->gen.prompt.size()));  // to the end of the context
  EXPECT_FLOAT_EQ(r->gen.sampling.top_p, 1.0f);
  EXPECT_EQ(r->gen.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(r->gen.sampling.repetition_penalty, 1.0f);
}

TEST(LocalAiPredictOptions, MessagesWithTheTokenizerTemplateRenderTheChatTemplate) {
  backend::PredictOptions o;
  o.set_usetokenizertemplate(true);
  o.set_tokens(4);
  auto* sys = o.add_messages();
  sys->set_role("system");
  sys->set_content("Be brief.");
  auto* user = o.add_messages();
  user->set_role("user");
  user->set_content("Hello");
  auto r = convert(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->endpoint, ApiEndpoint::kChatCompletions);
  ChatInput input;
  input.messages = {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello"}}};
  auto text = chatml().render(input);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(r->gen.prompt, tokenize_chat_prompt(*text, stories260k().tokenizer()));
}

TEST(LocalAiPredictOptions, TheTokenizerTemplateWithoutMessagesUsesThePrompt) {
  auto o = prompt_options("Once");
  o.set_usetokenizertemplate(true);  // LocalAI's /v1/completions with use_tokenizer_template
  auto r = convert(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->endpoint, ApiEndpoint::kCompletions);
}

TEST(LocalAiPredictOptions, MetadataBecomesTemplateVariables) {
  backend::PredictOptions o;
  o.set_usetokenizertemplate(true);
  o.add_messages()->set_role("user");
  (*o.mutable_metadata())["enable_thinking"] = "false";
  (*o.mutable_metadata())["chat_template_kwargs"] = "{\"reasoning_effort\": \"low\"}";
  bool chat = false;
  auto body = openai_body_for(o, &chat);
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_TRUE(chat);
  EXPECT_EQ((*body)["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ((*body)["chat_template_kwargs"]["reasoning_effort"], "low");
  (*o.mutable_metadata())["chat_template_kwargs"] = "[1]";
  EXPECT_EQ(openai_body_for(o, &chat).error().param, "Metadata");
}

TEST(LocalAiPredictOptions, GrammarConstrainsTheRequest) {
  auto o = prompt_options("Hi");
  o.set_grammar("root ::= \"yes\" | \"no\"");
  auto r = convert(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->gen.grammar, nullptr);
  o.set_grammar("root ::= (");
  expect_refused(o, "Grammar");
}

TEST(LocalAiPredictOptions, MalformedMessagesAreRefusedNamingMessages) {
  backend::PredictOptions o;
  o.set_usetokenizertemplate(true);
  o.add_messages()->set_role("");
  expect_refused(o, "Messages");
  o.mutable_messages(0)->set_role("assistant");
  o.mutable_messages(0)->set_tool_calls("not json");
  expect_refused(o, "Messages");
  backend::PredictOptions no_template;
  no_template.add_messages()->set_role("user");
  expect_refused(no_template, "Messages");
}

TEST(LocalAiPredictOptions, UnimplementedFieldsAreRefusedByName) {
  const std::vector<std::pair<std::string, std::function<void(backend::PredictOptions&)>>> cases = {
      {"Images", [](auto& o) { o.add_images("aGk="); }},
      {"Audios", [](auto& o) { o.add_audios("aGk="); }},
      {"Videos", [](auto& o) { o.add_videos("aGk="); }},
      {"Mirostat", [](auto& o) { o.set_mirostat(2); }},
      {"TypicalP", [](auto& o) { o.set_typicalp(0.5f); }},
      {"TailFreeSamplingZ", [](auto& o) { o.set_tailfreesamplingz(0.9f); }},
      {"NegativePrompt", [](auto& o) { o.set_negativeprompt("bad"); }},
      {"RopeFreqBase", [](auto& o) { o.set_ropefreqbase(10000); }},
      {"NDraft", [](auto& o) { o.set_ndraft(4); }},
      {"TopLogprobs", [](auto& o) { o.set_toplogprobs(2); }},  // without Logprobs
      {"TopLogprobs", [](auto& o) { o.set_logprobs(1), o.set_toplogprobs(21); }},
      {"PenalizeNL", [](auto& o) { o.set_penalizenl(true); }},
      {"Repeat", [](auto& o) { o.set_penalty(1.2f), o.set_repeat(64); }},
      {"Tools", [](auto& o) { o.set_tools("[]"); }},  // tools need the chat template
      {"LogitBias", [](auto& o) { o.set_logitbias("{"); }},
      {"Tokens", [](auto& o) { o.set_tokens(-1); }},
      {"Temperature", [](auto& o) { o.set_temperature(-1); }},
      {"Prompt", [](auto& o) { o.set_prompt(""); }},
      {"Tokens", [](auto& o) { o.set_tokens(100000); }},  // beyond the context
  };
  for (const auto& [field, set] : cases) {
    SCOPED_TRACE(field);
    auto o = prompt_options("Hi");
    set(o);
    expect_refused(o, field);
  }
}

TEST(LocalAiPredictOptions, LogprobsAskForTopLogprobsAlternatives) {
  auto o = prompt_options("Hi");
  auto off = convert(o);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->gen.logprobs, -1);
  o.set_logprobs(1);
  o.set_toplogprobs(3);
  auto on = convert(o);
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_EQ(on->gen.logprobs, 3);
  o.set_prompt("");
  o.set_usetokenizertemplate(true);
  o.add_messages()->set_role("user");
  auto chat = convert(o);
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  EXPECT_EQ(chat->gen.logprobs, 3);
  o.set_toplogprobs(21);
  expect_refused(o, "TopLogprobs");
}

TEST(LocalAiPredictOptions, FieldNamesMapBack) {
  EXPECT_EQ(predict_field_for("max_tokens"), "Tokens");
  EXPECT_EQ(predict_field_for("stop"), "StopPrompts");
  EXPECT_EQ(predict_field_for("repetition_penalty"), "Penalty");
  EXPECT_EQ(predict_field_for("something_else"), "something_else");
}

}  // namespace
}  // namespace pagoda::localai
