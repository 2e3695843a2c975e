// UTF-8 helpers shared by the tokenizers. Two decoders exist on purpose: the lenient one reproduces how
// llama.cpp reads (possibly invalid) input text, so our token ids match its ids byte for byte; the strict one
// (in streaming_detokenizer.cpp) decides what may be shown to a user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces, judged by its high nibble only (continuation bytes
// count as 1). This is the rule llama.cpp uses to cut text into symbols before merging.
inline size_t utf8_lead_length(char lead) {
  static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[static_cast<uint8_t>(lead) >> 4];
}

// Decodes like llama.cpp's unicode_cpts_from_utf8: a malformed sequence yields one U+FFFD and skips one byte;
// overlong forms and surrogates are accepted as the code points they spell.
std::vector<uint32_t> decode_utf8_lenient(std::string_view text);

// Appends the UTF-8 form of `cpt`. Surrogates and values above U+10FFFF are written as U+FFFD so the result
// is always valid UTF-8.
void append_utf8(std::string& out, uint32_t cpt);

// decode_utf8_lenient and re-encoding, which is what llama.cpp's pre-tokenizer hands to BPE: malformed bytes
// become U+FFFD, overlong forms their shortest form. Surrogates keep their 3-byte form (ED A0..BF xx) as in
// llama.cpp, so the result is valid UTF-8 except for those; values above U+10FFFF (where llama.cpp throws)
// become U+FFFD.
std::string normalize_utf8_lenient(std::string_view text);

}  // namespace pagoda
