#include "server/kv_events_publisher.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

TEST(KvEventsConfig, VllmFieldsParseAndBadOnesAreNamed) {
  auto c = KvEventsConfig::parse(R"({"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:6000",
      "replay_endpoint": "tcp://*:6001", "buffer_steps": 5, "hwm": 7, "topic": "kv", "medium": "CPU",
      "event_form": "array"})");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->enable_kv_cache_events);
  EXPECT_EQ(c->endpoint, "tcp://*:6000");
  EXPECT_EQ(c->replay_endpoint, "tcp://*:6001");
  EXPECT_EQ(c->buffer_steps, 5);
  EXPECT_EQ(c->hwm, 7);
  EXPECT_EQ(c->topic, "kv");
  EXPECT_TRUE(c->legacy_array_form);
  for (const char* bad : {R"({"publisher": "kafka"})", R"({"hwm": 0})", R"({"buffer_steps": "x"})",
                          R"({"endpointt": "x"})", R"({"event_form": "tuple"})", "[]", "not json"}) {
    auto r = KvEventsConfig::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(KvEventsConfig::parse(R"({"hwm": 0})").error().message.find("'hwm'"), std::string::npos);
}

TEST(KvEventsConfig, BindOrConnectAsVllmDecides) {
  EXPECT_TRUE(kv_endpoint_binds("tcp://*:5557"));
  EXPECT_TRUE(kv_endpoint_binds("tcp://[::]:5557"));
  EXPECT_TRUE(kv_endpoint_binds("ipc:///tmp/kv"));
  EXPECT_TRUE(kv_endpoint_binds("inproc://kv"));
  EXPECT_FALSE(kv_endpoint_binds("tcp://10.0.0.5:5557"));
}

// The msgpack bytes, by hand: a check on the encoding that does not use the encoder's library.
TEST(KvEventsEncoding, MapAndPositionalFormsAreMsgpackAsVllmWritesThem) {
  KvCacheEvent cleared;
  cleared.kind = KvCacheEvent::Kind::kCleared;
  KvEventsConfig c;
  std::string b = encode_kv_event_batch({cleared}, 1.5, c);
  // [1.5, [{"type": "AllBlocksCleared"}], 0]
  const std::string want = std::string("\x93\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\x91\x81\xa4type\xb0" "AllBlocksCleared\x00", 35);
  EXPECT_EQ(b, want);
  c.legacy_array_form = true;
  b = encode_kv_event_batch({cleared}, 1.5, c);
  EXPECT_EQ(b, std::string("\x93\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\x91\x91\xb0" "AllBlocksCleared\x00", 30));
  KvCacheEvent removed;
  removed.kind = KvCacheEvent::Kind::kRemoved;
  removed.block_hashes = {0xfedcba9876543210ull};
  c.legacy_array_form = false;
  b = encode_kv_event_batch({removed}, 0, c);
  // {"type": "BlockRemoved", "block_hashes": [uint64], "medium": "CPU"}: a map of 3, the hash as uint 64 (0xcf).
  EXPECT_NE(b.find(std::string("\x83\xa4type\xac" "BlockRemoved\xac" "block_hashes\x91\xcf\xfe\xdc\xba\x98\x76\x54\x32\x10"
                               "\xa6medium\xa3" "CPU", 49)),
            std::string::npos);
}

}  // namespace
}  // namespace pagoda
