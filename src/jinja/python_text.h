// Python str semantics on UTF-8 strings: what chat templates call on message text (strip, split, upper, title, ...)
// must give the bytes CPython gives. Python strings are sequences of code points, so lengths, indices and slices
// count code points, not bytes.
//
// Bytes that are not valid UTF-8 decode to U+DC80..U+DCFF (Python's "surrogateescape") and encode back to the same
// byte, so no input is lost or rejected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja::py {

// The code point at byte offset i, advancing i past it.
char32_t next_code_point(std::string_view s, size_t& i);
std::u32string decode_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view s);
bool is_ascii(std::string_view s);
// Number of code points.
size_t length(std::string_view s);

// str.isspace() for one code point (Unicode White_Space plus the ASCII separators Python counts).
bool is_space(char32_t c);
// str.isprintable() for one code point, approximately: control, format, separator and surrogate characters are not.
bool is_printable(char32_t c);
bool is_alpha(char32_t c);
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);

// str.strip / lstrip / rstrip; `chars` nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / rsplit; `sep` nullopt splits on runs of whitespace. maxsplit < 0: no limit. An empty separator is a
// ValueError in Python; callers check that first.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.splitlines() (keepends=False): splits on \n \r \r\n \v \f \x1c \x1d \x1e \x85 \u2028 \u2029.
std::vector<std::string> splitlines(std::string_view s);
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);
// str.find: code point index of the first occurrence at or after code point `start`, or -1.
int64_t find(std::string_view s, std::string_view sub);
int64_t count(std::string_view s, std::string_view sub);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
std::string swapcase(std::string_view s);

// repr() of a str: quoted with ' unless the text has ' and no ", escaping like CPython.
std::string repr_string(std::string_view s);
// repr() / str() of a float: the shortest text that reads back to the same double, in Python's layout
// (1.0, 1e-05, 1e+16, inf, nan).
std::string float_repr(double d);

}  // namespace pagoda::jinja::py
