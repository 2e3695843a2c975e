// Ed25519 for anchors, through libsodium (their SHA-256 is util/sha256.h's). libsodium's verifier is the strict one
// pagoda relies on: it rejects non-canonical S (S >= L), small-order R, and small-order or non-canonical public keys,
// where Debian's OpenSSL 3.0 accepts for example the identity key with the signature (R = identity, S = 0).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"
#include "util/sha256.h"

namespace pagoda {

using Ed25519PublicKey = std::array<uint8_t, 32>;
using Ed25519SecretKey = std::array<uint8_t, 64>;  // libsodium's form: seed followed by the public key
using Ed25519Signature = std::array<uint8_t, 64>;

// libsodium's one-time initialisation (thread-safe, idempotent); every function below calls it.
void ensure_sodium_initialized();

std::string to_hex(const uint8_t* bytes, size_t n);  // lowercase
template <size_t N>
std::string to_hex(const std::array<uint8_t, N>& bytes) {
  return to_hex(bytes.data(), N);
}
// Exactly 2*N lowercase or uppercase hex digits.
template <size_t N>
Result<std::array<uint8_t, N>> from_hex(std::string_view hex);

// A key pinned in a trust root must be a canonical encoding of a point of the prime-order subgroup (no small-order
// or mixed-order points): such keys are what make a signature bind one signer.
bool ed25519_public_key_is_valid(const Ed25519PublicKey& key);
// The key id of a public key: lowercase hex SHA-256 of its 32 bytes.
std::string ed25519_key_id(const Ed25519PublicKey& key);
// Strict verification (see the file comment).
bool ed25519_verify(const Ed25519Signature& sig, std::string_view message, const Ed25519PublicKey& key);
// How many verifications this process has run (the metric pagoda:anchor_signature_verifications_total, which must
// not move while requests decode: verification happens at registration, never on the token path).
uint64_t ed25519_verification_count();

// For the CLI's keygen and sign, and for tests.
struct Ed25519KeyPair {
  Ed25519PublicKey public_key;
  Ed25519SecretKey secret_key;
};
Ed25519KeyPair ed25519_generate();
Ed25519KeyPair ed25519_from_seed(const std::array<uint8_t, 32>& seed);  // deterministic (tests)
Ed25519Signature ed25519_sign(std::string_view message, const Ed25519SecretKey& key);

}  // namespace pagoda
