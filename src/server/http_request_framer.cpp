#include "server/http_request_framer.h"

#include <algorithm>
#include <cctype>

#include "util/hex_digit.h"

namespace pagoda {
namespace {

constexpr size_t kMaxChunkLine = 1024;  // a chunk-size line, extensions included
constexpr size_t kMaxHexDigits = 15;    // 2^60 bytes: larger than any body limit, far from overflow

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

RequestFramer::State RequestFramer::fail(int status, std::string message) {
  state_ = State::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  return state_;
}

RequestFramer::State RequestFramer::advance(std::string_view bytes) {
  if (state_ != State::kNeedMore) return state_;
  if (phase_ == Phase::kHead) {
    // The head ends at the first empty line ("\r\n") after the request line: "\n\r\n". Lines ending in a bare LF
    // do not end it, as the HTTP library reading the request after us skips them.
    const size_t first_nl = bytes.find('\n');
    size_t end = std::string_view::npos;
    if (first_nl != std::string_view::npos) {
      const size_t from = std::max(first_nl, pos_ >= 2 ? pos_ - 2 : 0);
      const size_t at = bytes.find("\n\r\n", from);
      if (at != std::string_view::npos) end = at + 3;
    }
    if (end == std::string_view::npos) {
      if (bytes.size() > limits_.max_head_bytes)
        return fail(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
      pos_ = bytes.size();
      return state_;
    }
    if (end > limits_.max_head_bytes)
      return fail(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) + " bytes");
    body_start_ = pos_ = end;
    if (parse_head(bytes.substr(0, end)) == State::kError) return state_;
  }
  switch (phase_) {
    case Phase::kLengthBody:
      if (bytes.size() - body_start_ < remaining_) return state_;
      end_ = body_start_ + static_cast<size_t>(remaining_);
      phase_ = Phase::kDone;
      return state_ = State::kComplete;
    case Phase::kDone:
      end_ = body_start_;
      return state_ = State::kComplete;
    default:
      return scan_chunks(bytes);
  }
}

RequestFramer::State RequestFramer::parse_head(std::string_view head) {
  bool have_length = false, chunked = false;
  uint64_t length = 0;
  size_t line_start = head.find('\n') + 1;  // past the request line
  while (line_start < head.size()) {
    const size_t nl = head.find('\n', line_start);
    std::string_view line = head.substr(line_start, nl - line_start);
    line_start = nl + 1;
    if (trim(line).empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return fail(400, "folded header lines are not supported");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // the library skips it too
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), [](char c) {
            return c >= '0' && c <= '9';
          }))
        return fail(400, "bad Content-Length '" + std::string(value.substr(0, 32)) + "'");
      const uint64_t n = std::stoull(std::string(value));
      if (have_length && n != length) return fail(400, "conflicting Content-Length headers");
      have_length = true;
      length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (chunked || !iequals(value, "chunked"))
        return fail(400, "unsupported Transfer-Encoding '" + std::string(value.substr(0, 32)) + "' (only chunked)");
      chunked = true;
    } else if (iequals(name, "Expect")) {
      expect_continue_ = iequals(value, "100-continue");
    }
  }
  if (chunked && have_length) return fail(400, "a request may not have both Content-Length and Transfer-Encoding");
  if (have_length && length > limits_.max_body_bytes)
    return fail(413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
  if (chunked) {
    phase_ = Phase::kChunkSize;
  } else if (have_length && length > 0) {
    phase_ = Phase::kLengthBody;
    remaining_ = length;
  } else {
    phase_ = Phase::kDone;
    expect_continue_ = false;  // nothing to wait for
  }
  return state_;
}

RequestFramer::State RequestFramer::scan_chunks(std::string_view bytes) {
  for (;;) {
    switch (phase_) {
      case Phase::kChunkSize: {
        const size_t nl = bytes.find('\n', pos_);
        if (nl == std::string_view::npos) {
          if (bytes.size() - pos_ > kMaxChunkLine) return fail(400, "a chunk-size line is too long");
          return state_;
        }
        if (nl - pos_ > kMaxChunkLine) return fail(400, "a chunk-size line is too long");
        const std::string_view line = bytes.substr(pos_, nl - pos_);
        uint64_t size = 0;
        size_t digits = 0;
        while (digits < line.size() && hex_digit_value(line[digits]) >= 0) {
          if (digits == kMaxHexDigits) return fail(413, "a chunk is larger than the body limit");
          size = size * 16 + static_cast<uint64_t>(hex_digit_value(line[digits]));
          ++digits;
        }
        const std::string_view rest = trim(line.substr(digits));
        if (digits == 0 || (!rest.empty() && rest.front() != ';')) return fail(400, "bad chunk-size line");
        if (body_bytes_ + size > limits_.max_body_bytes)
          return fail(413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
        body_bytes_ += size;
        pos_ = nl + 1;
        if (size == 0) {
          phase_ = Phase::kTrailers;
        } else {
          remaining_ = size;
          phase_ = Phase::kChunkData;
        }
        break;
      }
      case Phase::kChunkData: {
        const uint64_t take = std::min<uint64_t>(remaining_, bytes.size() - pos_);
        pos_ += static_cast<size_t>(take);
        remaining_ -= take;
        if (remaining_ > 0) return state_;
        phase_ = Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkDataEnd:
      case Phase::kTrailers:
        // After a chunk's data, and after the last chunk, exactly CRLF (the library reading the body after us
        // accepts no trailers).
        if ((bytes.size() > pos_ && bytes[pos_] != '\r') || (bytes.size() > pos_ + 1 && bytes[pos_ + 1] != '\n'))
          return fail(400, phase_ == Phase::kTrailers ? "chunked trailers are not supported" : "malformed chunked body");
        if (bytes.size() - pos_ < 2) return state_;
        pos_ += 2;
        if (phase_ == Phase::kTrailers) {
          end_ = pos_;
          phase_ = Phase::kDone;
          return state_ = State::kComplete;
        }
        phase_ = Phase::kChunkSize;
        break;
      default:
        return state_;
    }
  }
}

}  // namespace pagoda
