#include "api/request_json.h"

#include <gtest/gtest.h>

#include "test_models.h"

namespace pagoda {
namespace {

class RequestJson : public ::testing::Test {
 protected:
  static std::string error_of(const char* text) {
    auto r = request_from_json(nlohmann::json::parse(text), stories260k().tokenizer());
    return r.ok() ? "" : r.error().message;
  }
};

TEST_F(RequestJson, DefaultsFollowTheOpenAiApi) {
  auto r = request_from_json(nlohmann::json::parse(R"({"id": 1, "prompt": "Once upon a time"})"), stories260k().tokenizer());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(r->max_tokens, 16);
  EXPECT_EQ(r->sampling.temperature, 1.0f);
  EXPECT_EQ(r->sampling.top_p, 1.0f);
  EXPECT_EQ(r->n, 1);
  EXPECT_FALSE(r->seed.has_value());
}

TEST_F(RequestJson, ReadsEveryField) {
  auto r = request_from_json(nlohmann::json::parse(R"({"prompt_ids": [1, 5], "max_tokens": 3, "temperature": 0.5,
      "top_p": 0.9, "top_k": 7, "min_p": 0.1, "seed": 9, "stop": ["a", "b"], "n": 2, "logprobs": 4,
      "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.2, "ignore_eos": true,
      "priority": -1, "cache_salt": "tenant"})"),
                             stories260k().tokenizer());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompt, (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(r->sampling.top_k, 7);
  EXPECT_EQ(*r->seed, 9u);
  EXPECT_EQ(r->stop.size(), 2u);
  EXPECT_EQ(r->n, 2);
  EXPECT_EQ(r->logprobs, 4);
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_EQ(r->priority, -1);
  EXPECT_EQ(r->cache_salt, "tenant");
  EXPECT_FLOAT_EQ(r->sampling.repetition_penalty, 1.2f);
}

TEST_F(RequestJson, ErrorsNameTheProblem) {
  EXPECT_NE(error_of(R"({"prompt": "x", "temprature": 1})").find("unknown field 'temprature'"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": 5})").find("'prompt' must be a string"), std::string::npos);
  EXPECT_NE(error_of(R"({"max_tokens": 5})").find("prompt"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "max_tokens": 0})").find("'max_tokens'"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "max_tokens": 1.5})").find("'max_tokens' must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "temperature": "hot"})").find("'temperature'"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "top_p": 0})").find("'top_p'"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "stop": [1]})").find("'stop'"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt_ids": [1, 99999]})").find("'prompt_ids'"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "n": 1000})").find("'n'"), std::string::npos);
  EXPECT_NE(error_of(R"([1, 2])").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"prompt": "x", "max_tokens": 18446744073709551615})").find("'max_tokens'"),
            std::string::npos);
}

}  // namespace
}  // namespace pagoda
