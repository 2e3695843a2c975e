// GPT-2's byte-level alphabet: every byte 0..255 is shown as one printable code point (bytes that are already
// printable map to themselves, the rest to U+0100 upwards), so BPE vocabularies can hold arbitrary bytes as
// ordinary strings. A space (0x20) is "Ġ" (U+0120), a newline "Ċ" (U+010A).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda {

// UTF-8 of the code point that stands for `byte`.
const std::string& byte_level_char(uint8_t byte);

// The byte a code point stands for, if it is one of the 256 alphabet code points.
std::optional<uint8_t> byte_level_byte(uint32_t cpt);

// Maps every byte of raw text to its alphabet character.
std::string byte_level_encode(std::string_view raw);

// Maps a vocabulary string back to raw bytes. Characters outside the alphabet are kept visible as
// "[UNK_BYTE_0x<hex><token text>]", exactly as llama.cpp's llama_decode_text renders them.
std::string byte_level_decode(std::string_view token_text);

}  // namespace pagoda
