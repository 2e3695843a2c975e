// An incremental parser for server-sent events (the WHATWG EventSource format that OpenAI-style streaming uses).
// Bytes arrive in arbitrary pieces; each call hands back the data of every event completed so far.
//   - Lines end with "\n", "\r\n" or "\r" (a "\r\n" split across two pieces is one line break).
//   - "data: x" lines accumulate (joined with "\n"); a blank line dispatches the event. One space after the colon
//     is dropped. Lines starting with ':' are comments; other fields (event, id, retry) are ignored.
//   - An event with no data line dispatches nothing; an unterminated event at end of stream is never dispatched.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::loadgen {

class SseParser {
 public:
  // Consumes the next bytes of the stream; appends the data of every event they complete to `events`.
  void feed(std::string_view bytes, std::vector<std::string>& events);

 private:
  void on_line(std::string_view line, std::vector<std::string>& events);

  std::string line_;       // the current line, not yet terminated
  std::string data_;       // the data lines of the current event, each followed by '\n'
  bool after_cr_ = false;  // the last byte was '\r': a '\n' right after it ends no new line
  bool started_ = false;   // past the optional UTF-8 byte-order mark at the start of the stream
};

}  // namespace pagoda::loadgen
