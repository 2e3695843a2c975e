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

TEST(ApiKeys, SingleKeyHasNoTenant) {
  ApiKeys keys;
  EXPECT_TRUE(keys.empty());
  keys.add("sekrit", "");
  EXPECT_EQ(keys.tenant_of("sekrit"), "");
  EXPECT_EQ(keys.tenant_of("sekrit "), std::nullopt);
}

}  // namespace
}  // namespace pagoda
