// libFuzzer target: untrusted bytes through the two parsers a verified anchor passes before its signature is
// checked, the strict base64 decoder (the DSSE payload) and the strict CBOR decoder (the payload itself). Errors
// are fine; crashes, sanitizer reports and broken invariants are not. The invariants are what the anchor checks
// rely on: a decoded CBOR value re-encodes to bytes that decode again to the same encoding (so comparing input
// with encode_cbor of the decoded value is a sound canonical-form test), and accepted base64 text is exactly what
// encode_base64 writes for its bytes (so a payload has one spelling).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "anchor/base64.h"
#include "anchor/cbor.h"

namespace {

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

void check_cbor(std::span<const uint8_t> input, const pagoda::CborLimits& limits) {
  auto decoded = pagoda::decode_cbor(input, limits);
  if (!decoded.ok()) return;
  const std::string encoded = pagoda::encode_cbor(*decoded);
  // Shortest heads never make the encoding longer than what was read.
  if (encoded.size() > input.size()) __builtin_trap();
  auto again = pagoda::decode_cbor(as_bytes(encoded), limits);
  if (!again.ok()) __builtin_trap();
  if (pagoda::encode_cbor(*again) != encoded) __builtin_trap();
  if (!pagoda::is_deterministic_cbor(as_bytes(encoded), *again)) __builtin_trap();
  if (pagoda::is_deterministic_cbor(input, *decoded) && !(*again == *decoded)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  check_cbor(input, {});
  check_cbor(input, pagoda::CborLimits{.max_depth = 2, .max_items = 64});  // the anchor payload's limits

  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = pagoda::decode_base64(text);
  if (decoded.ok()) {
    if (pagoda::encode_base64(*decoded) != text) __builtin_trap();
    check_cbor(as_bytes(*decoded), {});
  }
  auto round_trip = pagoda::decode_base64(pagoda::encode_base64(text));
  if (!round_trip.ok() || *round_trip != text) __builtin_trap();
  return 0;
}
