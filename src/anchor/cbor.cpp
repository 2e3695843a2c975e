#include "anchor/cbor.h"

#include <algorithm>
#include <map>

namespace pagoda {
namespace {

constexpr uint8_t kMajorUnsigned = 0;
constexpr uint8_t kMajorNegative = 1;
constexpr uint8_t kMajorBytes = 2;
constexpr uint8_t kMajorText = 3;
constexpr uint8_t kMajorArray = 4;
constexpr uint8_t kMajorMap = 5;
constexpr uint8_t kMajorTag = 6;
constexpr uint8_t kMajorSimple = 7;

constexpr uint8_t kInfoOneByte = 24;  // 24..27: the argument follows in 1, 2, 4 or 8 bytes
constexpr uint8_t kInfoIndefinite = 31;

// "1 byte", "2 bytes": error messages quote counts taken from untrusted input.
std::string count_of(uint64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}
std::string bytes_count(uint64_t n) { return count_of(n, "byte", "bytes"); }

// Names what a major type 7 item would have been, so that an error says "true" rather than "simple value 21".
std::string simple_value_name(uint8_t info) {
  switch (info) {
    case 20: return "false";
    case 21: return "true";
    case 22: return "null";
    case 23: return "undefined";
    case 25: return "half-precision float";
    case 26: return "single-precision float";
    case 27: return "double-precision float";
    case 31: return "break stop code";
    default: return "simple value";
  }
}

// Where a string is not strict UTF-8 (RFC 3629: no overlong forms, no UTF-16 surrogates, nothing above U+10FFFF),
// the offset of the first byte of the bad sequence; the size of the string when it is valid.
size_t first_invalid_utf8(std::span<const uint8_t> s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t lead = s[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint8_t second_min = 0x80, second_max = 0xBF;  // the second byte's range narrows for a few leads
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_min = 0xA0;  // below: overlong
      if (lead == 0xED) second_max = 0x9F;  // above: surrogates U+D800..U+DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_min = 0x90;  // below: overlong
      if (lead == 0xF4) second_max = 0x8F;  // above: beyond U+10FFFF
    } else {
      return i;  // a continuation byte, an overlong two-byte lead (C0, C1), or F5..FF
    }
    if (s.size() - i < length) return i;
    if (s[i + 1] < second_min || s[i + 1] > second_max) return i;
    for (size_t k = 2; k < length; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += length;
  }
  return s.size();
}

void append_head(std::string& out, uint8_t major, uint64_t argument) {
  const auto initial = [&](uint8_t info) { out.push_back(static_cast<char>((major << 5) | info)); };
  int n_bytes = 0;
  if (argument < kInfoOneByte) {
    initial(static_cast<uint8_t>(argument));
  } else if (argument <= 0xFF) {
    initial(24);
    n_bytes = 1;
  } else if (argument <= 0xFFFF) {
    initial(25);
    n_bytes = 2;
  } else if (argument <= 0xFFFFFFFF) {
    initial(26);
    n_bytes = 4;
  } else {
    initial(27);
    n_bytes = 8;
  }
  for (int k = n_bytes - 1; k >= 0; --k) out.push_back(static_cast<char>((argument >> (8 * k)) & 0xFF));
}

void encode_into(const CborValue& value, std::string& out) {
  switch (value.type) {
    case CborValue::Type::kUnsigned: append_head(out, kMajorUnsigned, value.uint); return;
    case CborValue::Type::kBytes:
    case CborValue::Type::kText:
      append_head(out, value.type == CborValue::Type::kBytes ? kMajorBytes : kMajorText, value.bytes.size());
      out += value.bytes;
      return;
    case CborValue::Type::kArray:
      append_head(out, kMajorArray, value.items.size());
      for (const auto& item : value.items) encode_into(item, out);
      return;
    case CborValue::Type::kMap: {
      // Deterministic order is defined on the encoded keys, so each entry is encoded before sorting. Values take
      // part in the order only to keep the output deterministic for a caller-built map with a repeated key.
      std::vector<std::pair<std::string, std::string>> encoded;
      encoded.reserve(value.entries.size());
      for (const auto& [key, item] : value.entries) {
        auto& [key_bytes, item_bytes] = encoded.emplace_back();
        encode_into(key, key_bytes);
        encode_into(item, item_bytes);
      }
      // std::string orders by char_traits<char>::compare, which compares as unsigned char: bytewise order.
      std::sort(encoded.begin(), encoded.end());
      append_head(out, kMajorMap, encoded.size());
      for (const auto& [key_bytes, item_bytes] : encoded) {
        out += key_bytes;
        out += item_bytes;
      }
      return;
    }
  }
}

// A recursive-descent decoder over a bounds-checked cursor. Every length and count is compared with the bytes
// left before it is used, and containers are not reserved up front, so memory follows the bytes actually read.
class CborDecoder {
 public:
  CborDecoder(std::span<const uint8_t> bytes, const CborLimits& limits)
      : bytes_(bytes),
        max_depth_(std::clamp(limits.max_depth, 0, kCborMaxDepthCeiling)),
        max_items_(limits.max_items) {}

  Result<CborValue> decode() {
    if (bytes_.empty()) return make_error("CBOR input is empty");
    CborValue value;
    PAGODA_RETURN_IF_ERROR(decode_item(value, 0));
    if (pos_ != bytes_.size())
      return make_error("CBOR input has " + count_of(bytes_.size() - pos_, "trailing byte", "trailing bytes") +
                        " after the data item, from offset " + std::to_string(pos_));
    return value;
  }

 private:
  struct Head {
    size_t offset = 0;  // of the initial byte
    uint8_t major = 0;
    uint8_t info = 0;
    uint64_t argument = 0;
  };

  size_t remaining() const { return bytes_.size() - pos_; }

  static Error error_at(size_t offset, const std::string& what) {
    return make_error("CBOR " + what + " at offset " + std::to_string(offset));
  }

  Status read_head(Head& head) {
    head.offset = pos_;
    if (remaining() == 0)
      return make_error("CBOR input truncated at offset " + std::to_string(pos_) + ": a data item was expected");
    const uint8_t initial = bytes_[pos_];
    head.major = initial >> 5;
    head.info = initial & 0x1F;
    // The major type is judged before the additional information, so that an unsupported kind is named as such
    // whatever its encoding (0xFF reads as a break stop code, not as an indefinite length).
    if (head.major == kMajorNegative) return error_at(pos_, "negative integer (major type 1) is not supported");
    if (head.major == kMajorTag) return error_at(pos_, "tag (major type 6) is not supported");
    if (head.major == kMajorSimple)
      return error_at(pos_, simple_value_name(head.info) + " (major type 7) is not supported");
    if (head.info >= 28 && head.info <= 30)
      return error_at(pos_, "reserved additional information " + std::to_string(head.info));
    if (head.info == kInfoIndefinite) {
      if (head.major == kMajorUnsigned)
        return error_at(pos_, "unsigned integer with additional information 31 (not well-formed)");
      return error_at(pos_, "indefinite-length " + std::string(major_name(head.major)) + " is not supported");
    }
    ++pos_;
    if (head.info < kInfoOneByte) {
      head.argument = head.info;
      return Status::success();
    }
    const size_t n_bytes = size_t{1} << (head.info - kInfoOneByte);
    if (remaining() < n_bytes)
      return make_error("CBOR input truncated at offset " + std::to_string(head.offset) +
                        ": the head's argument needs " + bytes_count(n_bytes) + ", " + bytes_count(remaining()) +
                        (remaining() == 1 ? " remains" : " remain"));
    uint64_t argument = 0;
    for (size_t k = 0; k < n_bytes; ++k) argument = (argument << 8) | bytes_[pos_ + k];
    pos_ += n_bytes;
    head.argument = argument;
    return Status::success();
  }

  static const char* major_name(uint8_t major) {
    switch (major) {
      case kMajorBytes: return "byte string";
      case kMajorText: return "text string";
      case kMajorArray: return "array";
      case kMajorMap: return "map";
      default: return "unsigned integer";
    }
  }

  // `depth` counts the arrays and maps that enclose the item.
  Status decode_item(CborValue& out, int depth) {
    if (items_ >= max_items_)
      return error_at(pos_, "input has more than " + std::to_string(max_items_) + " data items (the limit)");
    ++items_;
    Head head;
    PAGODA_RETURN_IF_ERROR(read_head(head));
    switch (head.major) {
      case kMajorUnsigned:
        out.type = CborValue::Type::kUnsigned;
        out.uint = head.argument;
        return Status::success();
      case kMajorBytes:
      case kMajorText: return decode_string(head, out);
      case kMajorArray: return decode_array(head, out, depth);
      case kMajorMap: return decode_map(head, out, depth);
      default: return error_at(head.offset, "unexpected major type");  // read_head rejected the others
    }
  }

  Status decode_string(const Head& head, CborValue& out) {
    if (head.argument > remaining())
      return error_at(head.offset, std::string(major_name(head.major)) + " declaring " + bytes_count(head.argument) +
                                       " with only " + bytes_count(remaining()) + " remaining");
    const auto content = bytes_.subspan(pos_, static_cast<size_t>(head.argument));
    if (head.major == kMajorText) {
      const size_t bad = first_invalid_utf8(content);
      if (bad != content.size())
        return error_at(pos_ + bad,
                        "text string (starting at offset " + std::to_string(head.offset) + ") with invalid UTF-8");
      out.type = CborValue::Type::kText;
    } else {
      out.type = CborValue::Type::kBytes;
    }
    out.bytes.assign(reinterpret_cast<const char*>(content.data()), content.size());
    pos_ += content.size();
    return Status::success();
  }

  Status check_container(const Head& head, int depth, uint64_t min_bytes_per_element, uint64_t items_per_element) {
    if (depth >= max_depth_)
      return error_at(head.offset, std::string(major_name(head.major)) + " nested deeper than the limit of " +
                                       std::to_string(max_depth_));
    const std::string count = head.major == kMajorMap ? count_of(head.argument, "entry", "entries")
                                                      : count_of(head.argument, "item", "items");
    // Every element takes at least one byte (a map entry two), so a count beyond what is left is impossible.
    if (head.argument > remaining() / min_bytes_per_element)
      return error_at(head.offset, std::string(major_name(head.major)) + " declaring " + count + " with only " +
                                       bytes_count(remaining()) + " remaining");
    if (head.argument > (max_items_ - items_) / items_per_element)
      return error_at(head.offset, std::string(major_name(head.major)) + " declaring " + count +
                                       ", beyond the limit of " + std::to_string(max_items_) + " data items");
    return Status::success();
  }

  Status decode_array(const Head& head, CborValue& out, int depth) {
    PAGODA_RETURN_IF_ERROR(check_container(head, depth, 1, 1));
    out.type = CborValue::Type::kArray;
    for (uint64_t i = 0; i < head.argument; ++i) {
      CborValue item;
      PAGODA_RETURN_IF_ERROR(decode_item(item, depth + 1));
      out.items.push_back(std::move(item));
    }
    return Status::success();
  }

  Status decode_map(const Head& head, CborValue& out, int depth) {
    PAGODA_RETURN_IF_ERROR(check_container(head, depth, 2, 2));
    out.type = CborValue::Type::kMap;
    // Keys are compared as values (by their deterministic encodings), not by their input bytes: 0x00 and 0x1800
    // are the same key, and a map holding both must not decode into two entries a lookup would choose between.
    // An ordered map, not a hash set, so that chosen keys cannot make the check quadratic.
    std::map<std::string, size_t> seen;  // encoded key -> offset of its first occurrence
    for (uint64_t i = 0; i < head.argument; ++i) {
      const size_t key_offset = pos_;
      CborValue key, item;
      PAGODA_RETURN_IF_ERROR(decode_item(key, depth + 1));
      auto [it, inserted] = seen.emplace(encode_cbor(key), key_offset);
      if (!inserted)
        return error_at(key_offset, "duplicate map key (the same key as at offset " + std::to_string(it->second) + ")");
      PAGODA_RETURN_IF_ERROR(decode_item(item, depth + 1));
      out.entries.emplace_back(std::move(key), std::move(item));
    }
    return Status::success();
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  int max_depth_;
  size_t max_items_;
  size_t items_ = 0;  // data items decoded so far, the one being decoded included
};

}  // namespace

CborValue::CborValue() = default;
CborValue::CborValue(const CborValue& other) = default;
CborValue::CborValue(CborValue&& other) noexcept = default;
CborValue& CborValue::operator=(const CborValue& other) = default;
CborValue& CborValue::operator=(CborValue&& other) noexcept = default;
CborValue::~CborValue() = default;

CborValue CborValue::unsigned_int(uint64_t value) {
  CborValue v;
  v.type = Type::kUnsigned;
  v.uint = value;
  return v;
}

CborValue CborValue::byte_string(std::string value) {
  CborValue v;
  v.type = Type::kBytes;
  v.bytes = std::move(value);
  return v;
}

CborValue CborValue::text(std::string value) {
  CborValue v;
  v.type = Type::kText;
  v.bytes = std::move(value);
  return v;
}

CborValue CborValue::array(std::vector<CborValue> items) {
  CborValue v;
  v.type = Type::kArray;
  v.items = std::move(items);
  return v;
}

CborValue CborValue::map(std::vector<std::pair<CborValue, CborValue>> entries) {
  CborValue v;
  v.type = Type::kMap;
  v.entries = std::move(entries);
  return v;
}

const CborValue* CborValue::find(std::string_view text_key) const {
  if (type != Type::kMap) return nullptr;
  for (const auto& [key, item] : entries)
    if (key.type == Type::kText && key.bytes == text_key) return &item;
  return nullptr;
}

bool CborValue::operator==(const CborValue& other) const {
  if (type != other.type) return false;
  switch (type) {
    case Type::kUnsigned: return uint == other.uint;
    case Type::kBytes:
    case Type::kText: return bytes == other.bytes;
    case Type::kArray: return items == other.items;
    case Type::kMap: return entries == other.entries;
  }
  return false;
}

const char* cbor_type_name(CborValue::Type type) {
  switch (type) {
    case CborValue::Type::kUnsigned: return "unsigned integer";
    case CborValue::Type::kBytes: return "byte string";
    case CborValue::Type::kText: return "text string";
    case CborValue::Type::kArray: return "array";
    case CborValue::Type::kMap: return "map";
  }
  return "unknown";
}

Result<CborValue> decode_cbor(std::span<const uint8_t> bytes, const CborLimits& limits) {
  return CborDecoder(bytes, limits).decode();
}

std::string encode_cbor(const CborValue& value) {
  std::string out;
  encode_into(value, out);
  return out;
}

bool is_deterministic_cbor(std::span<const uint8_t> bytes, const CborValue& decoded) {
  const std::string encoded = encode_cbor(decoded);
  return encoded.size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), encoded.begin(),
                                                      [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); });
}

}  // namespace pagoda
