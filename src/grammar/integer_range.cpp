#include "grammar/integer_range.h"

#include <algorithm>
#include <vector>

namespace pagoda::grammar {
namespace {

std::string digit_class(char from, char to) {
  if (from == to) return std::string("\"") + from + "\"";
  if (from == '0' && to == '9') return "[0-9]";
  return std::string("[") + from + "-" + to + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

void join(std::string& seq, const std::string& part) {
  if (part.empty()) return;
  if (!seq.empty()) seq += ' ';
  seq += part;
}

// Alternatives (sequences) matching the digit strings s with a <= s <= b, all of a's length (a <= b).
void same_length(const std::string& a, const std::string& b, const std::string& prefix, std::vector<std::string>& out) {
  if (a.empty()) {
    out.push_back(prefix);
    return;
  }
  if (a[0] == b[0]) {
    std::string p = prefix;
    join(p, digit_class(a[0], a[0]));
    same_length(a.substr(1), b.substr(1), p, out);
    return;
  }
  const size_t rest = a.size() - 1;
  const bool a_rest_zero = a.find_first_not_of('0', 1) == std::string::npos;
  const bool b_rest_nine = b.find_first_not_of('9', 1) == std::string::npos;
  // a's first digit, then at least a's rest (any digits when that rest is all zeros).
  char mid_from = static_cast<char>(a[0] + 1), mid_to = static_cast<char>(b[0] - 1);
  if (a_rest_zero) {
    mid_from = a[0];
  } else {
    std::string p = prefix;
    join(p, digit_class(a[0], a[0]));
    same_length(a.substr(1), std::string(rest, '9'), p, out);
  }
  if (b_rest_nine) mid_to = b[0];
  // The digits strictly between (or including an edge whose rest is unconstrained), then any digits.
  if (mid_from <= mid_to) {
    std::string p = prefix;
    join(p, digit_class(mid_from, mid_to));
    join(p, any_digits(rest));
    out.push_back(p);
  }
  // b's first digit, then at most b's rest.
  if (!b_rest_nine) {
    std::string p = prefix;
    join(p, digit_class(b[0], b[0]));
    same_length(std::string(rest, '0'), b.substr(1), p, out);
  }
}

// Alternatives for the positive integers in [a, b], 1 <= a <= b.
void positive(int64_t a, int64_t b, std::vector<std::string>& out) {
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  for (size_t len = sa.size(); len <= sb.size(); ++len) {
    const std::string lo = len == sa.size() ? sa : "1" + std::string(len - 1, '0');
    const std::string hi = len == sb.size() ? sb : std::string(len, '9');
    same_length(lo, hi, "", out);
  }
}

}  // namespace

std::string integer_range_gbnf(int64_t lo, int64_t hi) {
  lo = std::max(lo, -kMaxIntegerBound);
  hi = std::min(hi, kMaxIntegerBound);
  std::vector<std::string> alts;
  if (lo <= 0 && hi >= 0) alts.push_back("\"0\"");
  if (hi >= 1) positive(std::max<int64_t>(lo, 1), hi, alts);
  if (lo <= -1) {
    std::vector<std::string> neg;
    positive(std::max<int64_t>(-hi, 1), -lo, neg);
    std::string inner;
    for (const std::string& n : neg) inner += (inner.empty() ? "" : " | ") + n;
    alts.push_back(neg.size() == 1 ? "\"-\" " + inner : "\"-\" ( " + inner + " )");
  }
  std::string expr;
  for (const std::string& a : alts) expr += (expr.empty() ? "" : " | ") + a;
  return "( " + expr + " )";
}

}  // namespace pagoda::grammar
