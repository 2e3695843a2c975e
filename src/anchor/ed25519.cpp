#include "anchor/ed25519.h"

#include <sodium.h>

#include <atomic>
#include <cstdlib>

#include "util/hex_digit.h"

namespace pagoda {

void ensure_sodium_initialized() {
  static const int rc = sodium_init();  // 0 first time, 1 if already done, -1 on failure
  if (rc < 0) std::abort();             // no safe way to go on without a working crypto library
}

std::string to_hex(const uint8_t* bytes, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return out;
}

template <size_t N>
Result<std::array<uint8_t, N>> from_hex(std::string_view hex) {
  if (hex.size() != 2 * N)
    return make_error("expected " + std::to_string(2 * N) + " hex digits, got " + std::to_string(hex.size()));
  std::array<uint8_t, N> out;
  for (size_t i = 0; i < N; ++i) {
    const int hi = hex_digit_value(hex[2 * i]), lo = hex_digit_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return make_error("not a hex digit at offset " + std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}
template Result<std::array<uint8_t, 32>> from_hex<32>(std::string_view);
template Result<std::array<uint8_t, 64>> from_hex<64>(std::string_view);

bool ed25519_public_key_is_valid(const Ed25519PublicKey& key) {
  ensure_sodium_initialized();
  return crypto_core_ed25519_is_valid_point(key.data()) == 1;
}

std::string ed25519_key_id(const Ed25519PublicKey& key) {
  return to_hex(sha256(std::string_view(reinterpret_cast<const char*>(key.data()), key.size())));
}

namespace {
// Process-wide like the library state it counts; read by the metrics page only.
std::atomic<uint64_t> g_verifications{0};
}  // namespace

uint64_t ed25519_verification_count() { return g_verifications.load(std::memory_order_relaxed); }

bool ed25519_verify(const Ed25519Signature& sig, std::string_view message, const Ed25519PublicKey& key) {
  ensure_sodium_initialized();
  g_verifications.fetch_add(1, std::memory_order_relaxed);
  return crypto_sign_verify_detached(sig.data(), reinterpret_cast<const unsigned char*>(message.data()),
                                     message.size(), key.data()) == 0;
}

Ed25519KeyPair ed25519_generate() {
  ensure_sodium_initialized();
  Ed25519KeyPair kp;
  crypto_sign_keypair(kp.public_key.data(), kp.secret_key.data());
  return kp;
}

Ed25519KeyPair ed25519_from_seed(const std::array<uint8_t, 32>& seed) {
  ensure_sodium_initialized();
  Ed25519KeyPair kp;
  crypto_sign_seed_keypair(kp.public_key.data(), kp.secret_key.data(), seed.data());
  return kp;
}

Ed25519Signature ed25519_sign(std::string_view message, const Ed25519SecretKey& key) {
  ensure_sodium_initialized();
  Ed25519Signature sig;
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                       key.data());
  return sig;
}

}  // namespace pagoda
