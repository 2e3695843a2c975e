#include "io/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf_writer.h"

namespace pagoda {
namespace {

GgufValue array_of(GgufValueType elem, std::vector<GgufValue> items) {
  auto arr = std::make_shared<GgufArray>();
  arr->elem_type = elem;
  arr->items = std::move(items);
  return GgufValue{GgufValueType::ARRAY, arr};
}

// A small valid file with every metadata kind and three tensors.
std::vector<uint8_t> sample_file() {
  GgufWriter w;
  w.set("u8", {GgufValueType::UINT8, uint64_t{200}});
  w.set("i8", {GgufValueType::INT8, int64_t{-5}});
  w.set("u16", {GgufValueType::UINT16, uint64_t{60000}});
  w.set("i16", {GgufValueType::INT16, int64_t{-30000}});
  w.set_uint32("u32", 4000000000u);
  w.set("i32", {GgufValueType::INT32, int64_t{-7}});
  w.set("u64", {GgufValueType::UINT64, uint64_t{1} << 40});
  w.set("i64", {GgufValueType::INT64, int64_t{-(int64_t{1} << 40)}});
  w.set_float32("f32", 0.5f);
  w.set("f64", {GgufValueType::FLOAT64, 0.25});
  w.set_bool("flag", true);
  w.set_string("general.name", "sample");
  w.set("strings", array_of(GgufValueType::STRING,
                            {{GgufValueType::STRING, std::string("a")}, {GgufValueType::STRING, std::string("bc")}}));
  w.set("nested",
        array_of(GgufValueType::ARRAY, {array_of(GgufValueType::INT32, {{GgufValueType::INT32, int64_t{1}}})}));
  w.add_tensor("a", GgmlType::F32, {4, 2}, std::vector<uint8_t>(32, 1));
  w.add_tensor("b", GgmlType::F16, {8}, std::vector<uint8_t>(16, 2));
  w.add_tensor("c", GgmlType::Q8_0, {32, 2}, std::vector<uint8_t>(68, 3));
  return w.to_bytes();
}

TEST(GgufFile, RoundTripsEveryValueKindAndTensors) {
  auto bytes = sample_file();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(*f->get_uint("u8"), 200u);
  EXPECT_EQ(*f->get_uint("u16"), 60000u);
  EXPECT_EQ(*f->get_uint("u32"), 4000000000u);
  EXPECT_EQ(*f->get_uint("u64"), uint64_t{1} << 40);
  EXPECT_EQ(*f->get_float("i64"), -1099511627776.0);
  EXPECT_EQ(*f->get_float("f32"), 0.5);
  EXPECT_EQ(*f->get_float("f64"), 0.25);
  EXPECT_EQ(*f->get_bool("flag"), true);
  EXPECT_EQ(*f->get_string("general.name"), "sample");
  auto strings = f->get_array("strings", GgufValueType::STRING);
  ASSERT_TRUE(strings.ok());
  ASSERT_EQ((*strings)->items.size(), 2u);
  EXPECT_EQ(std::get<std::string>((*strings)->items[1].data), "bc");
  ASSERT_EQ(f->tensors().size(), 3u);
  const GgufTensorInfo* c = f->find_tensor("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->type, GgmlType::Q8_0);
  EXPECT_EQ(c->n_bytes, 68u);
  EXPECT_EQ(c->data[0], 3);
  EXPECT_EQ(static_cast<size_t>(c->data - bytes.data()) % 32, 0u);
}

TEST(GgufFile, TypedGettersNameTheKey) {
  auto bytes = sample_file();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(f.ok());
  auto missing = f->get_uint("llama.block_count");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("'llama.block_count' is missing"), std::string::npos);
  auto wrong = f->get_uint("general.name");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("has type string"), std::string::npos);
  EXPECT_FALSE(f->get_uint("i8").ok());  // negative
}

TEST(GgufFile, EveryTruncationIsAnErrorNotACrash) {
  auto bytes = sample_file();
  // Only the padding after the last tensor's data may be cut without losing anything.
  auto full = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(full.ok());
  const GgufTensorInfo& last = full->tensors().back();
  const size_t data_end = static_cast<size_t>(last.data - bytes.data()) + last.n_bytes;
  ASSERT_LT(data_end, bytes.size());
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);  // own allocation so ASan sees overreads
    auto f = GgufFile::parse(prefix.data(), prefix.size());
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufFile, TensorPastTheEndIsNamed) {
  GgufWriter w;
  w.add_tensor("blk.3.attn_q.weight", GgmlType::F32, {64, 64}, std::vector<uint8_t>(64 * 64 * 4));
  auto bytes = w.to_bytes();
  bytes.resize(bytes.size() - 100);
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("tensor 'blk.3.attn_q.weight' extends past the end of the file"), std::string::npos)
      << f.error().message;
}

// Patches a little-endian integer at a byte offset.
template <typename T>
void poke(std::vector<uint8_t>& b, size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}

TEST(GgufFile, HostileHeadersAreRejected) {
  auto good = sample_file();
  struct Case {
    const char* what;
    size_t off;
    uint64_t value;
    size_t width;
    const char* expect;
  } cases[] = {
      {"bad magic", 0, 0x12345678, 4, "bad magic"},
      {"version 1", 4, 1, 4, "unsupported GGUF version 1"},
      {"huge tensor count", 8, uint64_t{1} << 60, 8, "tensor count"},
      {"huge metadata count", 16, uint64_t{1} << 60, 8, "metadata count"},
      {"huge key length", 24, uint64_t{1} << 62, 8, "exceeds the file"},
  };
  for (const auto& c : cases) {
    auto b = good;
    if (c.width == 4)
      poke<uint32_t>(b, c.off, static_cast<uint32_t>(c.value));
    else
      poke<uint64_t>(b, c.off, c.value);
    auto f = GgufFile::parse(b.data(), b.size());
    ASSERT_FALSE(f.ok()) << c.what;
    EXPECT_NE(f.error().message.find(c.expect), std::string::npos) << c.what << ": " << f.error().message;
  }
}

TEST(GgufFile, HugeArrayAndBadTypesAreRejected) {
  GgufWriter w;
  w.set("arr", array_of(GgufValueType::UINT32, {{GgufValueType::UINT32, uint64_t{1}}}));
  auto bytes = w.to_bytes();
  // Layout: header 24 bytes, key length 8 + "arr" 3, value type 4, elem type 4, count 8.
  const size_t count_off = 24 + 8 + 3 + 4 + 4;
  auto b = bytes;
  poke<uint64_t>(b, count_off, uint64_t{1} << 61);
  auto f = GgufFile::parse(b.data(), b.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("array length of metadata key 'arr'"), std::string::npos) << f.error().message;
  b = bytes;
  poke<uint32_t>(b, 24 + 8 + 3, 99);
  f = GgufFile::parse(b.data(), b.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("invalid value type 99"), std::string::npos);
}

TEST(GgufFile, UnknownTensorTypeMisalignedOffsetAndBadRowAreRejected) {
  GgufWriter w;
  w.add_tensor("t", GgmlType::F32, {8}, std::vector<uint8_t>(32));
  auto bytes = w.to_bytes();
  // Tensor info: header 24, name 8+1, n_dims 4, ne 8, type 4, offset 8.
  const size_t type_off = 24 + 8 + 1 + 4 + 8;
  auto b = bytes;
  poke<uint32_t>(b, type_off, 77);
  auto f = GgufFile::parse(b.data(), b.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("tensor 't' has unknown tensor type 77"), std::string::npos);
  b = bytes;
  poke<uint64_t>(b, type_off + 4, 3);
  f = GgufFile::parse(b.data(), b.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("not aligned"), std::string::npos);
  b = bytes;
  poke<uint32_t>(b, type_off, static_cast<uint32_t>(GgmlType::Q8_0));  // 8 elements: not a whole Q8_0 block
  f = GgufFile::parse(b.data(), b.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("not a multiple"), std::string::npos);
}

TEST(GgufFile, OverlappingTensorsAreRejected) {
  GgufWriter w;
  w.add_tensor("a", GgmlType::F32, {8}, std::vector<uint8_t>(32));
  w.add_tensor("b", GgmlType::F32, {8}, std::vector<uint8_t>(32));
  auto bytes = w.to_bytes();
  // Second tensor info: after the header (24) and the first info (8 + 1 + 4 + 8 + 4 + 8 = 33); offset at +25.
  poke<uint64_t>(bytes, 24 + 33 + 8 + 1 + 4 + 8 + 4, 0);
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("overlaps tensor"), std::string::npos) << f.error().message;
}

TEST(GgufFile, MisalignedTensorDataIsRejected) {
  GgufWriter w;
  w.set("general.alignment", {GgufValueType::UINT32, uint64_t{1}});
  w.add_tensor("t", GgmlType::F32, {1}, std::vector<uint8_t>(4));
  auto bytes = w.to_bytes();  // header 24 + key 33 + info 33 = 90: not a multiple of 4
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("tensor 't' data is not aligned to 4 bytes"), std::string::npos)
      << f.error().message;
}

TEST(GgufFile, MetadataArraysCannotBlowUpMemory) {
  // One uint8 array of 2^24 + 1 elements: small on disk, ~48x larger as parsed values. Rejected before allocation.
  const uint64_t n = (uint64_t{1} << 24) + 1;
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t k) {
    b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + k);
  };
  const uint32_t magic = kGgufMagic, version = 3, arr = 9, u8 = 0;
  const uint64_t n_tensors = 0, n_kv = 1, key_len = 1;
  put(&magic, 4), put(&version, 4), put(&n_tensors, 8), put(&n_kv, 8), put(&key_len, 8), b.push_back('x');
  put(&arr, 4), put(&u8, 4), put(&n, 8);
  b.resize(b.size() + n, 7);
  auto f = GgufFile::parse(b.data(), b.size());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("metadata arrays hold more than"), std::string::npos) << f.error().message;
}

TEST(GgufFile, OpenReportsMissingFile) {
  auto f = GgufFile::open("/nonexistent/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("cannot open '/nonexistent/model.gguf'"), std::string::npos);
}

TEST(GgufFile, ReadsTheRealModel) {
  auto f = GgufFile::open(std::string(PAGODA_SHARED_DIR) + "/models/stories260K.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_NE(f->find_tensor("blk.4.ffn_down.weight"), nullptr);
}

}  // namespace
}  // namespace pagoda
