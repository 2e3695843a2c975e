// Turns a stream of generated tokens into displayable text. Byte-fallback and byte-level tokens can split one
// character across several tokens (e.g. "€" as <0xE2><0x82><0xAC>), so a client printing each piece as it
// arrives would show broken characters. push() returns only complete, valid UTF-8 and holds back the start of
// a character until its last byte arrives; bytes that can never form a character become U+FFFD, one per
// maximal invalid subsequence (the WHATWG / Unicode "best practice" rule), so output is always valid UTF-8.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace pagoda {

class StreamingDetokenizer {
 public:
  // `tok` must outlive this object.
  explicit StreamingDetokenizer(const Tokenizer& tok) : tok_(tok) {}

  // The text completed by this token; empty while a multi-byte character is still incomplete.
  std::string push(TokenId id);
  // Whatever is still held back, with an unfinished character rendered as U+FFFD; the stream is then empty.
  std::string flush();

 private:
  const Tokenizer& tok_;
  std::string pending_;  // the first 1..3 bytes of an unfinished character
};

// Appends the valid UTF-8 prefix of `bytes` to `out` (invalid subsequences as U+FFFD) and returns how many
// trailing bytes were left unconsumed because they start a character that may still be completed. With
// `at_end`, nothing is left: an unfinished character becomes U+FFFD.
size_t append_valid_utf8(std::string_view bytes, bool at_end, std::string& out);

}  // namespace pagoda
