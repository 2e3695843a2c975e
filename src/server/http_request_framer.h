// Where one HTTP/1.1 request ends in the bytes a connection has sent so far: the connection front
// (server/connection_front.h) reads requests without a thread and hands a connection to a worker only once a whole
// request is there, so a client that sends slowly holds no thread.
//
// The framer only delimits; the worker's HTTP library parses. Head: up to the first empty line (CRLF or bare LF
// lines), at most max_head_bytes. Body: Content-Length bytes, or a chunked body up to its last chunk and trailers,
// or nothing. Refused with a status, before any worker sees the request: a head too large (431), a body larger
// than max_body_bytes (413), a malformed or conflicting length (400: Content-Length with Transfer-Encoding,
// differing Content-Lengths, a transfer coding other than chunked, a bad chunk size line), which also keeps the
// framer and the library from ever disagreeing about where a request ends (request smuggling).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda {

struct FramerLimits {
  size_t max_head_bytes = size_t{64} << 10;
  size_t max_body_bytes = size_t{4} << 20;
};

class RequestFramer {
 public:
  enum class State { kNeedMore, kComplete, kError };

  explicit RequestFramer(FramerLimits limits) : limits_(limits) {}

  // Scans `bytes`, everything the connection sent since the request began (the same bytes as the last call, with
  // more appended), from where the last call stopped. kComplete: the request is bytes[0, request_size()); bytes after
  // it belong to the next request.
  State advance(std::string_view bytes);

  State state() const { return state_; }
  bool head_complete() const { return phase_ != Phase::kHead; }
  bool expects_continue() const { return expect_continue_; }  // the head asked for "100 Continue" before the body
  size_t request_size() const { return end_; }
  int error_status() const { return error_status_; }  // with kError: 400, 413 or 431
  const std::string& error_message() const { return error_message_; }

  // Starts over for the next request on the same connection.
  void reset() { *this = RequestFramer(limits_); }

 private:
  enum class Phase { kHead, kLengthBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone };
  State fail(int status, std::string message);
  State parse_head(std::string_view head);
  State scan_chunks(std::string_view bytes);

  FramerLimits limits_;
  State state_ = State::kNeedMore;
  Phase phase_ = Phase::kHead;
  size_t pos_ = 0;           // bytes scanned
  size_t body_start_ = 0;    // offset of the body
  uint64_t remaining_ = 0;   // kLengthBody: body bytes still to come; kChunkData: this chunk's bytes still to come
  uint64_t body_bytes_ = 0;  // chunked: data bytes so far
  size_t end_ = 0;
  bool expect_continue_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace pagoda
