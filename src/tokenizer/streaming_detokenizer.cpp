#include "tokenizer/streaming_detokenizer.h"

#include <cstdint>

namespace pagoda {
namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Length of a well-formed sequence starting with `lead` and the allowed range of its second byte (Unicode
// Table 3-7); the narrowed ranges exclude overlong forms, surrogates and code points above U+10FFFF.
struct LeadInfo {
  size_t length;  // 0: cannot start a character
  uint8_t second_lo;
  uint8_t second_hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

size_t append_valid_utf8(std::string_view bytes, bool at_end, std::string& out) {
  size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const LeadInfo info = lead_info(b);
    if (info.length == 0) {
      out += kReplacementUtf8;
      ++i;
      continue;
    }
    size_t k = 1;  // bytes of the sequence accepted so far
    while (k < info.length && i + k < bytes.size()) {
      const auto c = static_cast<uint8_t>(bytes[i + k]);
      const uint8_t lo = k == 1 ? info.second_lo : 0x80;
      const uint8_t hi = k == 1 ? info.second_hi : 0xBF;
      if (c < lo || c > hi) break;
      ++k;
    }
    if (k == info.length) {
      out.append(bytes.substr(i, k));
    } else if (i + k == bytes.size() && !at_end) {
      return bytes.size() - i;  // a valid start that the next token may finish
    } else {
      out += kReplacementUtf8;  // the maximal invalid subpart, as one replacement character
    }
    i += k;
  }
  return 0;
}

std::string StreamingDetokenizer::push(TokenId id) {
  pending_ += tok_.piece(id);
  std::string out;
  const size_t kept = append_valid_utf8(pending_, /*at_end=*/false, out);
  pending_.erase(0, pending_.size() - kept);
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out;
  append_valid_utf8(pending_, /*at_end=*/true, out);
  pending_.clear();
  return out;
}

}  // namespace pagoda
