#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

namespace pagoda {
namespace {

// A file from a header object and a data section.
std::vector<uint8_t> file_of(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
  return out;
}

Result<SafetensorsFile> parse(const std::vector<uint8_t>& bytes) { return SafetensorsFile::parse(bytes.data(), bytes.size()); }

std::string error_of(const std::string& header, size_t data_bytes) {
  auto bytes = file_of(header, data_bytes);
  auto r = parse(bytes);
  return r.ok() ? std::string("(parsed)") : r.error().message;
}

TEST(Safetensors, ReadsTensorsAsViewsIntoTheData) {
  auto bytes = file_of(
      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[24,30]},)"
      R"("__metadata__":{"format":"pt"}})",
      30);
  auto f = parse(bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->tensors().size(), 2u);
  const SafetensorsTensor* w = f->find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type, GgmlType::F32);
  EXPECT_EQ(w->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(w->n_bytes, 24u);
  const SafetensorsTensor* b = f->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, GgmlType::BF16);
  EXPECT_EQ(b->data - w->data, 24);
  EXPECT_EQ(b->data[0], 24);  // a view, not a copy
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(Safetensors, RefusesHostileHeaders) {
  // Each attack names its problem.
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8).find("outside the data"), std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8).find("need 12"), std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8).find("outside the data"), std::string::npos);
  EXPECT_NE(error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", 2).find("dtype I8 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8)
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", 8).find("non-negative"), std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1],"data_offsets":[0,4]}})", 4).find("5 dimensions"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"w":{"dtype":"F32","shape":[2]}})", 8).find("data_offsets"), std::string::npos);
  EXPECT_NE(error_of(R"({"w":[1,2]})", 8).find("not an object"), std::string::npos);
  EXPECT_NE(error_of(R"(["not", "an object"])", 0).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"w":)", 0).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"__metadata__":{"k":1}})", 0).find("not a string"), std::string::npos);
}

TEST(Safetensors, RefusesBadLengths) {
  std::vector<uint8_t> tiny = {1, 2, 3};
  EXPECT_NE(parse(tiny).error().message.find("too small"), std::string::npos);
  // A header length past the end of the file, and one past the format's cap: refused before any allocation.
  std::vector<uint8_t> past = file_of("{}", 0);
  past[0] = 200;
  EXPECT_NE(parse(past).error().message.find("past the end"), std::string::npos);
  std::vector<uint8_t> huge(16, 0);
  huge[7] = 0x7f;
  EXPECT_NE(parse(huge).error().message.find("exceeds the limit"), std::string::npos);
}

TEST(Safetensors, DeeplyNestedHeaderIsRefusedWithoutCrashing) {
  std::string header = "{\"w\":";
  for (int i = 0; i < 100000; ++i) header += "[";
  for (int i = 0; i < 100000; ++i) header += "]";
  header += "}";
  auto bytes = file_of(header, 0);
  EXPECT_FALSE(parse(bytes).ok());
}

}  // namespace
}  // namespace pagoda
