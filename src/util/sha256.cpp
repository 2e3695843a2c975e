#include "util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace pagoda {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  // EVP fails only when it cannot allocate (or libcrypto lacks SHA-256): abort, as on any failed allocation.
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t size) {
  if (size > 0 && EVP_DigestUpdate(ctx_, data, size) != 1) std::abort();
}

Sha256Digest Sha256::finish() {
  Sha256Digest out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1 || len != out.size()) std::abort();
  return out;
}

Sha256Digest sha256(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.finish();
}

Result<Sha256Digest> sha256_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error("cannot open '" + path + "' to hash it");
  Sha256 h;
  std::vector<unsigned char> buf(size_t{1} << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return make_error("cannot read '" + path + "' to hash it");
  return h.finish();
}

}  // namespace pagoda
