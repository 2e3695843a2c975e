#include "tokenizer/byte_level.h"

#include <array>
#include <cstdio>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

bool is_printable_byte(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// The last alphabet code point: 256 bytes, 188 of them printable, so the other 68 take U+0100..U+0143.
constexpr uint32_t kLastAlphabetCpt = 0x100 + 68 - 1;

struct ByteLevelTables {
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, kLastAlphabetCpt + 1> cpt_to_byte;  // -1 where the code point is not in the alphabet

  ByteLevelTables() {
    cpt_to_byte.fill(-1);
    uint32_t next_extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cpt = is_printable_byte(b) ? static_cast<uint32_t>(b) : next_extra++;
      append_utf8(byte_to_utf8[b], cpt);
      cpt_to_byte[cpt] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables kTables;
  return kTables;
}

}  // namespace

const std::string& byte_level_char(uint8_t byte) { return tables().byte_to_utf8[byte]; }

std::optional<uint8_t> byte_level_byte(uint32_t cpt) {
  if (cpt > kLastAlphabetCpt || tables().cpt_to_byte[cpt] < 0) return std::nullopt;
  return static_cast<uint8_t>(tables().cpt_to_byte[cpt]);
}

std::string byte_level_encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) out += byte_level_char(static_cast<uint8_t>(c));
  return out;
}

std::string byte_level_decode(std::string_view token_text) {
  std::string out;
  for (uint32_t cpt : decode_utf8_lenient(token_text)) {
    if (auto byte = byte_level_byte(cpt)) {
      out.push_back(static_cast<char>(*byte));
      continue;
    }
    std::string utf8;
    append_utf8(utf8, cpt);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
      out += hex;
    }
    out.append(token_text);
    out += "]";
  }
  return out;
}

}  // namespace pagoda
