// Strict standard base64 (RFC 4648 section 4: alphabet A-Z a-z 0-9 + /, '=' padding), as DSSE envelopes carry
// their payload. Signatures cover the decoded bytes, so the decoder accepts exactly one spelling of each byte
// string: the one encode_base64 produces. Anything else (missing padding, whitespace, the URL-safe alphabet,
// non-zero unused bits) is an error rather than something to be tolerated, which keeps two different envelope
// texts from carrying the same payload.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace pagoda {

// Decodes padded standard base64. Errors name the problem and, for a bad character, its offset: a length that is
// not a multiple of 4, a character outside the alphabet (whitespace, line breaks, '-' and '_' included), '=' other
// than as the last one or two characters, and non-zero unused bits in the last quantum (a non-canonical spelling).
// The empty text decodes to the empty string.
Result<std::string> decode_base64(std::string_view text);

// Encodes `bytes` as padded standard base64 with no line breaks.
std::string encode_base64(std::string_view bytes);

}  // namespace pagoda
