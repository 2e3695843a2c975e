#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

bool is_continuation(std::string_view text, size_t i) {
  return i < text.size() && (static_cast<uint8_t>(text[i]) & 0xC0) == 0x80;
}

}  // namespace

std::vector<uint32_t> decode_utf8_lenient(std::string_view text) {
  std::vector<uint32_t> cpts;
  cpts.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const uint32_t b0 = static_cast<uint8_t>(text[i]);
    auto cont = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(text[i + k]) & 0x3F); };
    if (b0 < 0x80) {
      cpts.push_back(b0);
      i += 1;
    } else if ((b0 & 0x40) == 0) {
      // A stray continuation byte.
      cpts.push_back(kReplacementChar);
      i += 1;
    } else if ((b0 & 0x20) == 0 && is_continuation(text, i + 1)) {
      cpts.push_back(((b0 & 0x1F) << 6) | cont(1));
      i += 2;
    } else if ((b0 & 0x20) == 0) {
      cpts.push_back(kReplacementChar);
      i += 1;
    } else if ((b0 & 0x10) == 0 && is_continuation(text, i + 1) && is_continuation(text, i + 2)) {
      cpts.push_back(((b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2));
      i += 3;
    } else if ((b0 & 0x10) == 0) {
      cpts.push_back(kReplacementChar);
      i += 1;
    } else if ((b0 & 0x08) == 0 && is_continuation(text, i + 1) && is_continuation(text, i + 2) &&
               is_continuation(text, i + 3)) {
      cpts.push_back(((b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3));
      i += 4;
    } else {
      cpts.push_back(kReplacementChar);
      i += 1;
    }
  }
  return cpts;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if ((cpt >= 0xD800 && cpt <= 0xDFFF) || cpt > 0x10FFFF) cpt = kReplacementChar;
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

std::string normalize_utf8_lenient(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (uint32_t cpt : decode_utf8_lenient(text)) {
    if (cpt >= 0xD800 && cpt <= 0xDFFF) {
      out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else {
      append_utf8(out, cpt);
    }
  }
  return out;
}

}  // namespace pagoda
