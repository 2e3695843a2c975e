// SHA-256, the one implementation pagoda uses: OpenSSL's libcrypto, for prefix-cache block keys, anchor digests and
// key ids, model-file digests, the anchor K/V re-check and tool-call ids. libcrypto rather than libsodium's
// crypto_hash_sha256 (libsodium stays for Ed25519 only): libcrypto runs SHA-NI where the CPU has it (about 1.65 GB/s
// against libsodium's portable 0.35 GB/s, docs/anchor-benchmark.md 4.8), and OpenSSL is needed anyway, since
// Debian's cpp-httplib is built with CPPHTTPLIB_OPENSSL_SUPPORT and its header includes OpenSSL's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of every includer

namespace pagoda {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental hashing: update() with the pieces in order, then finish() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  Sha256Digest finish();

 private:
  evp_md_ctx_st* ctx_;
};

Sha256Digest sha256(std::string_view bytes);
// SHA-256 of a file's bytes, read in chunks (model files are large): the model digest anchors are bound to.
Result<Sha256Digest> sha256_file(const std::string& path);

}  // namespace pagoda
