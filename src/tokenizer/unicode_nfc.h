// Unicode NFC normalization (canonical decomposition, then canonical composition), for Hugging Face tokenizers
// whose tokenizer.json declares an NFC normalizer (Qwen2). Computed by ICU, Debian's maintained Unicode library
// (the tables are data, not product code). Text that is ASCII, the common case, is returned as is.
#pragma once

#include <string>
#include <string_view>

namespace pagoda {

// `text` must be valid UTF-8 (the tokenizer's input is made valid first); on an ICU failure the text is returned
// unchanged.
std::string to_nfc(std::string_view text);

}  // namespace pagoda
