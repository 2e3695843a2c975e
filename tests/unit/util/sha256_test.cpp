// SHA-256 against published digests (FIPS 180-2's examples and the empty string), whole, in pieces and from a file:
// block keys, anchor digests and model digests are all these bytes, so a wrong or swapped implementation fails here.
#include "util/sha256.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace pagoda {
namespace {

std::string hex(const Sha256Digest& d) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) out += {kDigits[b >> 4], kDigits[b & 15]};
  return out;
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, PiecesHashAsTheWhole) {
  const std::string million(1000000, 'a');
  const std::string want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  EXPECT_EQ(hex(sha256(million)), want);
  Sha256 h;
  size_t at = 0;
  for (size_t piece = 1; at < million.size(); piece = piece * 3 + 1) {  // uneven pieces, some across 64-byte blocks
    const size_t n = std::min(piece, million.size() - at);
    h.update(million.data() + at, n);
    h.update(million.data(), 0);  // an empty piece changes nothing
    at += n;
  }
  EXPECT_EQ(hex(h.finish()), want);
}

TEST(Sha256, FileDigestSpansReadChunks) {
  // 3,000,000 bytes: more than two of sha256_file's 1 MiB reads.
  char path[] = "/tmp/pagoda_sha256_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string bytes(3000000, 'a');
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  auto d = sha256_file(path);
  std::remove(path);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(hex(*d), "2a152c894398719c0570f83fac34ac03a0f6e8e474b995c2403aa5434f7b9dd4");
  auto missing = sha256_file(std::string(path) + "-missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace pagoda
