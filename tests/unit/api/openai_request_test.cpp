#include "api/openai_request.h"

#include <gtest/gtest.h>

#include <tuple>

#include "test_models.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

class OpenAiRequestTest : public ::testing::Test {
 protected:
  static Result<OpenAiRequest> completion(const char* text, int64_t max_model_len = 512) {
    return parse_completion_request(json::parse(text), stories260k().tokenizer(), ApiLimits{max_model_len, {}});
  }
  static Result<OpenAiRequest> chat(const char* text, int64_t max_model_len = 512) {
    return parse_chat_request(json::parse(text), stories260k().tokenizer(), ApiLimits{max_model_len, {}});
  }
  static std::string param_of(const Result<OpenAiRequest>& r) { return r.ok() ? "(ok)" : r.error().param; }
};

TEST_F(OpenAiRequestTest, CompletionDefaultsFollowOpenAi) {
  auto r = completion(R"({"model": "m", "prompt": "Once upon a time"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "m");
  EXPECT_FALSE(r->stream);
  EXPECT_EQ(r->gen.max_tokens, 16);
  EXPECT_FLOAT_EQ(r->gen.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r->gen.sampling.top_p, 1.0f);
  EXPECT_EQ(r->gen.n, 1);
  EXPECT_EQ(r->gen.logprobs, -1);
  EXPECT_EQ(r->gen.prompt, stories260k().tokenizer().encode("Once upon a time", true, true));
}

TEST_F(OpenAiRequestTest, PromptForms) {
  EXPECT_EQ(completion(R"({"prompt": [1, 403, 407]})")->gen.prompt, (std::vector<int32_t>{1, 403, 407}));
  EXPECT_EQ(completion(R"({"prompt": [[1, 403]]})")->gen.prompt, (std::vector<int32_t>{1, 403}));
  EXPECT_EQ(completion(R"({"prompt": ["Hi"]})")->gen.prompt, completion(R"({"prompt": "Hi"})")->gen.prompt);
  EXPECT_EQ(param_of(completion(R"({"prompt": []})")), "prompt");
  EXPECT_EQ(param_of(completion(R"({"prompt": ["a", 5]})")), "prompt");
  EXPECT_EQ(param_of(completion(R"({"prompt": [[1, 2], []]})")), "prompt");
  EXPECT_EQ(param_of(completion(R"({"prompt": [100000]})")), "prompt");
  EXPECT_EQ(param_of(completion(R"({"prompt": {"a": 1}})")), "prompt");
  EXPECT_EQ(param_of(completion(R"({"max_tokens": 3})")), "prompt");
  EXPECT_FALSE(completion(R"([1, 2])").ok());
}

TEST_F(OpenAiRequestTest, SeveralPromptsInOneCompletionRequest) {
  const Tokenizer& tok = stories260k().tokenizer();
  auto r = completion(R"({"prompt": ["Once", "Lily went to"], "n": 2})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->prompts.size(), 2u);
  EXPECT_EQ(r->prompts[0], tok.encode("Once", true, true));
  EXPECT_EQ(r->prompts[1], tok.encode("Lily went to", true, true));
  EXPECT_EQ(r->gen.prompt, r->prompts[0]);
  EXPECT_EQ(r->gen.n, 2);
  auto ids = completion(R"({"prompt": [[1, 403], [1, 407, 261]]})");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->prompts, (std::vector<std::vector<int32_t>>{{1, 403}, {1, 407, 261}}));
  EXPECT_EQ(completion(R"({"prompt": "x"})")->prompts.size(), 1u);
  // Every prompt must leave room for max_tokens: the longest one decides.
  EXPECT_TRUE(completion(R"({"prompt": [[1], [1, 2, 3]], "max_tokens": 7})", 10).ok());
  EXPECT_EQ(param_of(completion(R"({"prompt": [[1], [1, 2, 3, 4]], "max_tokens": 7})", 10)), "max_tokens");
  // At most 128 choices (prompts x n).
  EXPECT_EQ(param_of(completion(R"({"prompt": ["a", "b", "c"], "n": 50})")), "n");
  json many = {{"prompt", json::array()}};
  for (int i = 0; i < 129; ++i) many["prompt"].push_back("a");
  auto too_many = parse_completion_request(many, tok, ApiLimits{512, {}});
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().param, "prompt");
}

TEST_F(OpenAiRequestTest, FieldsNotImplementedAre400NamingThemNeverIgnored) {
  for (const char* field : {"response_format", "tools", "tool_choice", "functions", "function_call"}) {
    const std::string body = std::string(R"({"messages": [{"role": "user", "content": "x"}], ")") + field + R"(": {}})";
    auto r = parse_chat_request(json::parse(body), stories260k().tokenizer(), ApiLimits{512, {}});
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.error().param, field);
    EXPECT_NE(r.error().message.find(field), std::string::npos);
  }
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "frobnicate": 1})")), "frobnicate");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "messages": []})")), "messages");  // a chat field on completions
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x"}], "prompt": "y"})")), "prompt");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x"}], "echo": false})")), "echo");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "suffix": "end"})")), "suffix");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "best_of": 3, "n": 2})")), "best_of");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "logit_bias": {"512": 1}})")), "logit_bias");
  // Message fields other than role and content (tool calls, names) are refused too.
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "assistant", "content": "x", "tool_calls": []}]})")), "messages");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x", "name": "bob"}]})")), "messages");
  // null is absent, and the no-op values of echo and best_of are accepted.
  EXPECT_TRUE(chat(R"({"messages": [{"role": "user", "content": "x", "name": null}], "tools": null,
                       "response_format": null})").ok());
  EXPECT_TRUE(completion(R"({"prompt": "x", "echo": false, "best_of": 2, "n": 2, "suffix": null})").ok());
}

TEST_F(OpenAiRequestTest, StructuredOutputFieldsCompileOrNameTheirProblem) {
  auto obj = completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(obj.ok()) << obj.error().message;
  ASSERT_NE(obj->gen.grammar, nullptr);
  auto text = completion(R"({"prompt": "x", "response_format": {"type": "text"}})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->gen.grammar, nullptr);
  auto schema = chat(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
      "json_schema": {"name": "person", "strict": true, "schema": {"type": "object", "properties":
      {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}}}})");
  ASSERT_TRUE(schema.ok()) << schema.error().message;
  EXPECT_TRUE(schema->gen.grammar->matcher().accepts(R"({"name": "Ada"})"));
  EXPECT_FALSE(schema->gen.grammar->matcher().accepts(R"({"nom": "Ada"})"));
  // The same schema text compiles once: the second request gets the cached grammar.
  auto again = chat(R"({"messages": [{"role": "user", "content": "y"}], "response_format": {"type": "json_schema",
      "json_schema": {"name": "person", "strict": true, "schema": {"type": "object", "properties":
      {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}}}})");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->gen.grammar, schema->gen.grammar);
  EXPECT_TRUE(completion(R"({"prompt": "x", "grammar": "root ::= [a-z]+"})").ok());
  EXPECT_TRUE(completion(R"({"prompt": "x", "guided_choice": ["a", "b"]})").ok());
  EXPECT_TRUE(completion(R"({"prompt": "x", "json_schema": {"type": "integer"}})").ok());
  for (const auto& [body, param, needle] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {R"({"prompt": "x", "response_format": {"type": "xml"}})", "response_format", "'xml'"},
           {R"({"prompt": "x", "response_format": "json"})", "response_format", "'type'"},
           {R"({"prompt": "x", "response_format": {"type": "json_schema"}})", "response_format", "'name' and 'schema'"},
           {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})",
            "response_format", "name' is required"},
           {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "n",
               "schema": {"type": "object", "if": {}}}}})", "response_format", "'if'"},
           {R"({"prompt": "x", "response_format": {"type": "json_object", "schema": {}}})", "response_format",
            "'response_format.schema'"},
           {R"({"prompt": "x", "grammar": "root ::= [a-"})", "grammar", "unterminated"},
           {R"({"prompt": "x", "grammar": 5})", "grammar", "GBNF"},
           {R"({"prompt": "x", "json_schema": {"type": "string", "pattern": "(?<=a)b"}})", "json_schema", "lookaround"},
           {R"({"prompt": "x", "guided_choice": []})", "guided_choice", "non-empty"},
           {R"({"prompt": "x", "grammar": "root ::= [a]", "guided_choice": ["a"]})", "guided_choice", "give one"},
       }) {
    auto r = completion(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().param, param) << body;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << body << " -> " << r.error().message;
  }
}

TEST_F(OpenAiRequestTest, KnownFieldsAreChecked) {
  EXPECT_TRUE(completion(R"({"prompt": "x", "user": "u"})").ok());
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "user": 5})")), "user");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "temperature": -1})")), "temperature");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "temperature": "1"})")), "temperature");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "max_tokens": 0})")), "max_tokens");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "stream": 1})")), "stream");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "stream_options": {"include_usage": true}})")),
            "stream_options");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "echo": true})")), "echo");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "priority": 1})")), "priority");
  auto s = completion(R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->stream && s->include_usage);
}

TEST_F(OpenAiRequestTest, LogitBias) {
  auto r = completion(R"({"prompt": "x", "logit_bias": {"3": -100, "7": 2.5}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gen.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{3, -100.0f}, {7, 2.5f}}));
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "logit_bias": {"3": 101}})")), "logit_bias");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "logit_bias": {"abc": 1}})")), "logit_bias");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "logit_bias": {"-1": 1}})")), "logit_bias");
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "logit_bias": {"600": 1}})")), "logit_bias");  // vocab is 512
  EXPECT_EQ(param_of(completion(R"({"prompt": "x", "logit_bias": [1]})")), "logit_bias");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"9999": 1}})")),
            "logit_bias");
}

TEST_F(OpenAiRequestTest, ContextLimitNamesTheField) {
  // 2 prompt tokens + 10 fit a context of 12; 11 do not.
  EXPECT_TRUE(completion(R"({"prompt": [1, 2], "max_tokens": 10})", 12).ok());
  auto over = completion(R"({"prompt": [1, 2], "max_tokens": 10})", 11);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().param, "max_tokens");
  EXPECT_NE(over.error().message.find("maximum context length is 11"), std::string::npos);
  EXPECT_EQ(param_of(completion(R"({"prompt": [1, 2, 3, 4]})", 4)), "prompt");
}

TEST_F(OpenAiRequestTest, ChatRendersMessagesAndDefaultsMaxTokensToTheContext) {
  auto r = chat(R"({"messages": [{"role": "user", "content": "Hi"}]})", 100);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto want = stories260k().tokenizer().encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", true, true);
  EXPECT_EQ(r->gen.prompt, want);
  EXPECT_EQ(r->gen.max_tokens, 100 - static_cast<int64_t>(want.size()));
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 5})")->gen.max_tokens, 5);
  auto parts = chat(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "H"},
                                                                    {"type": "text", "text": "i"}]}]})");
  EXPECT_EQ(parts->gen.prompt, chat(R"({"messages": [{"role": "user", "content": "Hi"}]})")->gen.prompt);
}

TEST_F(OpenAiRequestTest, ChatLogprobsAndErrors) {
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})")->gen.logprobs, 0);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 4})")
                ->gen.logprobs,
            4);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false})")->gen.logprobs, -1);
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})")),
            "top_logprobs");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})")), "logprobs");
  EXPECT_EQ(param_of(chat(R"({"messages": {}})")), "messages");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user"}], "max_completion_tokens": -2})")), "max_tokens");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": 3, "content": "x"}]})")), "messages");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})")), "messages");
}

}  // namespace
}  // namespace pagoda
