#include "server/api_keys.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

TEST(ApiKeys, ParsesTenantKeyLinesWithComments) {
  auto keys = ApiKeys::parse("# tenants\nacme  key-a\n\n  globex\tkey-b  # trailing comment\r\n", "keys.txt");
  ASSERT_TRUE(keys.ok()) << keys.error().message;
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_EQ(keys->tenant_of("key-a"), "acme");
  EXPECT_EQ(keys->tenant_of("key-b"), "globex");
  EXPECT_EQ(keys->tenant_of("key-"), std::nullopt);
  EXPECT_EQ(keys->tenant_of("key-ab"), std::nullopt);
  EXPECT_EQ(keys->tenant_of(""), std::nullopt);
}

TEST(ApiKeys, ErrorsNameTheLine) {
  auto one_field = ApiKeys::parse("acme key-a\nlonely\n", "k");
  ASSERT_FALSE(one_field.ok());
  EXPECT_NE(one_field.error().message.find("k:2"), std::string::npos) << one_field.error().message;
  EXPECT_FALSE(ApiKeys::parse("a k1\nb k1\n", "k").ok());  // one key, two tenants
  EXPECT_FALSE(ApiKeys::parse("a k1 extra\n", "k").ok());
  EXPECT_FALSE(ApiKeys::parse("# nothing\n", "k").ok());
  EXPECT_FALSE(ApiKeys::load_file("/nonexistent/keys").ok());
}

TEST(ApiKeys, TenantLimitsFromOptions) {
  auto keys = ApiKeys::parse(
      "acme k1 max_running=2 max_waiting=8 rpm=60 kv_share=0.5\n"
      "acme k2 max_running=2 max_waiting=8 rpm=60 kv_share=0.5\n"  // repeated identically
      "acme k3\n"                                                   // a key without options
      "globex k4 max_kv_blocks=100\n"
      "initech k5\n",
      "keys");
  ASSERT_TRUE(keys.ok()) << keys.error().message;
  const TenantLimitsMap& t = keys->tenant_limits();
  ASSERT_EQ(t.size(), 2u);  // initech has no limits
  EXPECT_EQ(t.at("acme").max_running, 2);
  EXPECT_EQ(t.at("acme").max_waiting, 8);
  EXPECT_EQ(t.at("acme").requests_per_minute, 60);
  EXPECT_DOUBLE_EQ(t.at("acme").kv_share, 0.5);
  EXPECT_EQ(t.at("globex").max_kv_blocks, 100);
  EXPECT_EQ(keys->tenant_of("k3"), "acme");
}

TEST(ApiKeys, BadLimitsAreNamed) {
  auto expect_error = [](const char* text, const char* fragment) {
    auto keys = ApiKeys::parse(text, "keys");
    ASSERT_FALSE(keys.ok()) << text;
    EXPECT_NE(keys.error().message.find(fragment), std::string::npos) << keys.error().message;
  };
  expect_error("a k1 max_running=0\n", "'max_running=0': the value must be a whole number >= 1");
  expect_error("a k1 max_running=2x\n", "'max_running=2x'");
  expect_error("a k1 rpm=\n", "'rpm='");
  expect_error("a k1 kv_share=1.5\n", "kv_share must be a number in (0, 1]");
  expect_error("a k1 kv_share=nan\n", "kv_share must be a number in (0, 1]");
  expect_error("a k1 max_kv_blocks=4 kv_share=0.5\n", "not both");
  expect_error("a k1 priority=1\n", "unknown option 'priority=1'");
  expect_error("a k1 rpm=5\na k2 rpm=6\n", "keys:2: tenant 'a' already has different limits");
}

TEST(ApiKeys, SingleKeyHasNoTenant) {
  ApiKeys keys;
  EXPECT_TRUE(keys.empty());
  keys.add("sekrit", "");
  EXPECT_EQ(keys.tenant_of("sekrit"), "");
  EXPECT_EQ(keys.tenant_of("sekrit "), std::nullopt);
}

}  // namespace
}  // namespace pagoda
