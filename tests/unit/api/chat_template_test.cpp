#include "api/chat_template.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

TEST(ChatTemplate, DetectsFamiliesFromTemplateText) {
  struct Case {
    const char* text;
    ChatTemplateFamily family;
  };
  const Case cases[] = {
      {"{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}",
       ChatTemplateFamily::kChatml},
      {"{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' }}", ChatTemplateFamily::kLlama3},
      {"{{ bos_token + '[INST] <<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' }}", ChatTemplateFamily::kLlama2},
      {"{{ '[INST] ' + message['content'] + ' [/INST]' }}", ChatTemplateFamily::kMistral},
      {"{{ '<start_of_turn>' + role + '\n' }}", ChatTemplateFamily::kGemma},
      {"{{ '<|user|>\n' + content + '<|end|>\n' }}", ChatTemplateFamily::kPhi3},
      {"{{ '<|user|>\n' + content + eos_token }}", ChatTemplateFamily::kZephyr},
  };
  for (const Case& c : cases) {
    bool recognised = false;
    EXPECT_EQ(detect_chat_template(c.text, &recognised), c.family) << c.text;
    EXPECT_TRUE(recognised) << c.text;
  }
  bool recognised = true;
  EXPECT_EQ(detect_chat_template("{{ messages }}", &recognised), ChatTemplateFamily::kChatml);
  EXPECT_FALSE(recognised);
}

TEST(ChatTemplate, RendersChatml) {
  auto text = render_chat(ChatTemplateFamily::kChatml, kConversation);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            "Hello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, RendersLlama3) {
  auto text = render_chat(ChatTemplateFamily::kLlama3, {{"user", "Hi"}});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, RendersLlama2WithSystemInFirstTurn) {
  auto text = render_chat(ChatTemplateFamily::kLlama2, kConversation);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Bye [/INST]");
}

TEST(ChatTemplate, RendersMistralGemmaPhi3Zephyr) {
  EXPECT_EQ(*render_chat(ChatTemplateFamily::kMistral, kConversation),
            "[INST] Be brief.\n\nHi [/INST] Hello.</s>[INST] Bye [/INST]");
  EXPECT_EQ(*render_chat(ChatTemplateFamily::kGemma, kConversation),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(*render_chat(ChatTemplateFamily::kPhi3, {{"user", "Hi"}}), "<|user|>\nHi<|end|>\n<|assistant|>\n");
  EXPECT_EQ(*render_chat(ChatTemplateFamily::kZephyr, {{"user", "Hi"}}), "<|user|>\nHi</s>\n<|assistant|>\n");
}

TEST(ChatTemplate, DeveloperIsSystemAndUnknownRolesAreErrors) {
  EXPECT_EQ(*render_chat(ChatTemplateFamily::kChatml, {{"developer", "x"}}),
            *render_chat(ChatTemplateFamily::kChatml, {{"system", "x"}}));
  auto bad = render_chat(ChatTemplateFamily::kChatml, {{"user", "a"}, {"tool", "b"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "messages");
  EXPECT_NE(bad.error().message.find("messages[1]"), std::string::npos);
  EXPECT_FALSE(render_chat(ChatTemplateFamily::kChatml, {}).ok());
}

TEST(ChatTemplate, NamesRoundTrip) {
  for (auto f : {ChatTemplateFamily::kChatml, ChatTemplateFamily::kLlama2, ChatTemplateFamily::kLlama3,
                 ChatTemplateFamily::kMistral, ChatTemplateFamily::kGemma, ChatTemplateFamily::kPhi3,
                 ChatTemplateFamily::kZephyr})
    EXPECT_EQ(*chat_template_from_name(chat_template_name(f)), f);
  EXPECT_FALSE(chat_template_from_name("jinja").ok());
}

}  // namespace
}  // namespace pagoda
