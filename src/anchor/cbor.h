// A strict CBOR (RFC 8949) codec for the subset that verified anchors use: unsigned integers, byte strings, text
// strings, arrays and maps, all with definite lengths. Anchor payloads arrive from untrusted sources, so the decoder
// rejects everything outside that subset (negative integers, tags, floats, simple values, indefinite lengths) and
// bounds nesting, item count and every declared length before allocating. Canonical form is checked separately:
// the decoder accepts non-shortest heads and unsorted map keys, and the caller compares the input with
// encode_cbor() of the decoded value (is_deterministic_cbor) to tell whether it was the one deterministic encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace pagoda {

struct CborValue {
  enum class Type { kUnsigned, kBytes, kText, kArray, kMap };

  Type type = Type::kUnsigned;
  uint64_t uint = 0;                                     // kUnsigned
  std::string bytes;                                     // kBytes (raw bytes) and kText (valid UTF-8)
  std::vector<CborValue> items;                          // kArray
  std::vector<std::pair<CborValue, CborValue>> entries;  // kMap, in the order they were encoded

  // Declared here and defaulted in cbor.cpp: `entries` holds pairs of this very type, and clang cannot decide
  // whether such a class is default-constructible (std::pair asks, while being instantiated) when the special
  // members are implicit.
  CborValue();
  CborValue(const CborValue& other);
  CborValue(CborValue&& other) noexcept;
  CborValue& operator=(const CborValue& other);
  CborValue& operator=(CborValue&& other) noexcept;
  ~CborValue();

  static CborValue unsigned_int(uint64_t value);
  static CborValue byte_string(std::string value);
  // The caller must pass valid UTF-8: encode_cbor does not check, and decode_cbor rejects what it produced.
  static CborValue text(std::string value);
  static CborValue array(std::vector<CborValue> items);
  // The caller must not repeat a key: encode_cbor does not check, and decode_cbor rejects what it produced.
  static CborValue map(std::vector<std::pair<CborValue, CborValue>> entries);

  // For a map: the value of the entry whose key is the text string `text_key`, or nullptr (also when this value is
  // not a map). A decoded map has no duplicate keys, so at most one entry matches.
  const CborValue* find(std::string_view text_key) const;

  // Structural equality: the same type and the same contents (map entries compared in order).
  bool operator==(const CborValue& other) const;
};

const char* cbor_type_name(CborValue::Type type);

struct CborLimits {
  // How many arrays/maps may enclose one another: at 8, eight nested arrays decode and nine do not; at 0 only a
  // scalar does. Values above kCborMaxDepthCeiling count as that ceiling, since decoding recurses once per level.
  int max_depth = 8;
  size_t max_items = 65536;  // total data items decoded: the top-level item, every array element, every map key and
                             // every map value
};

inline constexpr int kCborMaxDepthCeiling = 64;

// Decodes exactly one data item that must span all of `bytes` (trailing bytes are an error). Accepts only major
// types 0 (unsigned), 2 (byte string), 3 (text string), 4 (array) and 5 (map), with definite lengths. Errors name
// the problem and the byte offset where it was found: negative integers (major type 1), tags (6), floats and simple
// values (7), indefinite lengths, reserved additional information 28-30, truncated input, invalid UTF-8 in a text
// string (strict: no overlong forms, no surrogates, nothing above U+10FFFF), duplicate map keys (keys equal as
// values, i.e. with equal deterministic encodings, so 0x00 and 0x1800 are duplicates), nesting deeper than
// limits.max_depth, more than limits.max_items items, and a declared length or count larger than the bytes left
// (checked before anything is allocated). Non-shortest heads and unsorted map keys decode: see
// is_deterministic_cbor.
Result<CborValue> decode_cbor(std::span<const uint8_t> bytes, const CborLimits& limits = {});

// The core deterministic encoding (RFC 8949 section 4.2.1): shortest-form heads, definite lengths, and map entries
// sorted by the bytewise lexicographic order of their encoded keys. The result is a byte string held in a
// std::string.
std::string encode_cbor(const CborValue& value);

// True when `bytes` is exactly the deterministic encoding of `decoded` (the value decode_cbor returned for them).
bool is_deterministic_cbor(std::span<const uint8_t> bytes, const CborValue& decoded);

}  // namespace pagoda
