#include "tokenizer/unicode_nfc.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

namespace pagoda {

std::string to_nfc(std::string_view text) {
  bool ascii = true;
  for (unsigned char c : text) ascii = ascii && c < 0x80;
  if (ascii) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&status);
  if (U_FAILURE(status)) return std::string(text);
  // UTF-8 -> UTF-16, normalize, -> UTF-8. An NFC string is at most 3x its input in UTF-16 code units.
  std::vector<UChar> utf16(text.size() + 1);
  int32_t n16 = 0;
  u_strFromUTF8(utf16.data(), static_cast<int32_t>(utf16.size()), &n16, text.data(), static_cast<int32_t>(text.size()),
                &status);
  if (U_FAILURE(status)) return std::string(text);
  std::vector<UChar> normalized(static_cast<size_t>(n16) * 3 + 1);
  const int32_t nn = unorm2_normalize(nfc, utf16.data(), n16, normalized.data(), static_cast<int32_t>(normalized.size()),
                                      &status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out(static_cast<size_t>(nn) * 3 + 1, '\0');
  int32_t n8 = 0;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &n8, normalized.data(), nn, &status);
  if (U_FAILURE(status)) return std::string(text);
  out.resize(static_cast<size_t>(n8));
  return out;
}

}  // namespace pagoda
