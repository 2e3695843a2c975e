// An exact grammar for the integers in a range: JSON Schema's minimum / maximum on "type": "integer".
//
// integer_range_gbnf(lo, hi) is a GBNF expression matching exactly the decimal integers n with lo <= n <= hi in
// JSON's canonical form (no leading zeros, no "+", no "-0"). It splits the range by sign and digit count and each
// same-length range [a, b] by its first differing digit: a's prefix then [a's digit] followed by "at least the rest
// of a", the digits strictly between followed by any digits, and b's digit followed by "at most the rest of b".
// Ranges are limited to |n| < 10^16, the digit bound json-integer has anyway.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::grammar {

inline constexpr int64_t kMaxIntegerBound = 9'999'999'999'999'999;  // 16 digits

// lo <= hi, both within +-kMaxIntegerBound.
std::string integer_range_gbnf(int64_t lo, int64_t hi);

}  // namespace pagoda::grammar
