#include "anchor/base64.h"

#include <array>
#include <cstdint>

namespace pagoda {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr int8_t kInvalid = -1;

// The 6-bit value of each byte, or kInvalid: a table rather than range tests so that every one of the 256 byte
// values has an explicit answer.
constexpr std::array<int8_t, 256> make_decode_table() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = kInvalid;
  for (int i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}
constexpr std::array<int8_t, 256> kDecodeTable = make_decode_table();

// Describes a byte by its hex value only: the text is untrusted and error messages end up in logs.
std::string describe_byte(char c) {
  constexpr char kHex[] = "0123456789abcdef";
  const auto b = static_cast<uint8_t>(c);
  return std::string("0x") + kHex[b >> 4] + kHex[b & 0xF];
}

}  // namespace

Result<std::string> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0)
    return make_error("base64 length " + std::to_string(text.size()) + " is not a multiple of 4");
  // Padding may only be the last one or two characters; it is found first so that each character below is
  // judged knowing whether it is data or padding.
  size_t n_padding = 0;
  if (!text.empty() && text.back() == '=') n_padding = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
  const size_t data_end = text.size() - n_padding;
  for (size_t i = 0; i < data_end; ++i) {
    if (text[i] == '=')
      return make_error("base64 padding '=' at offset " + std::to_string(i) + " is not at the end of the text");
    if (kDecodeTable[static_cast<uint8_t>(text[i])] == kInvalid)
      return make_error("base64 character " + describe_byte(text[i]) + " at offset " + std::to_string(i) +
                        " is not in the standard alphabet");
  }

  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t accumulator = 0;
  int n_bits = 0;
  for (size_t i = 0; i < data_end; ++i) {
    accumulator = (accumulator << 6) | static_cast<uint32_t>(kDecodeTable[static_cast<uint8_t>(text[i])]);
    n_bits += 6;
    if (n_bits >= 8) {
      n_bits -= 8;
      out.push_back(static_cast<char>((accumulator >> n_bits) & 0xFF));
    }
  }
  // One '=' leaves 2 unused bits in the last data character, two leave 4; encoders write them as zero, and
  // accepting other values would give one payload several spellings.
  if (n_bits > 0 && (accumulator & ((1u << n_bits) - 1)) != 0)
    return make_error("base64 character at offset " + std::to_string(data_end - 1) +
                      " has non-zero unused bits (a non-canonical encoding)");
  return out;
}

std::string encode_base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t group = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                           (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) | static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[(group >> 18) & 0x3F]);
    out.push_back(kAlphabet[(group >> 12) & 0x3F]);
    out.push_back(kAlphabet[(group >> 6) & 0x3F]);
    out.push_back(kAlphabet[group & 0x3F]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t group = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) group |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[(group >> 18) & 0x3F]);
    out.push_back(kAlphabet[(group >> 12) & 0x3F]);
    out.push_back(rest == 2 ? kAlphabet[(group >> 6) & 0x3F] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace pagoda
