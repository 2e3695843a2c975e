#include "server/http_request_framer.h"

#include <gtest/gtest.h>

#include <string>

namespace pagoda {
namespace {

using State = RequestFramer::State;

// Feeds `request` one byte at a time, as the slowest client would; returns the state after the last byte and the
// number of bytes it took to complete (0 when it never did).
std::pair<State, size_t> feed_bytewise(RequestFramer& f, const std::string& request) {
  for (size_t n = 1; n <= request.size(); ++n) {
    const State s = f.advance(std::string_view(request).substr(0, n));
    if (s != State::kNeedMore) return {s, n};
  }
  return {f.state(), 0};
}

TEST(RequestFramer, GetWithoutBodyCompletesAtTheEmptyLine) {
  const std::string req = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  RequestFramer f({});
  auto [state, at] = feed_bytewise(f, req);
  EXPECT_EQ(state, State::kComplete);
  EXPECT_EQ(at, req.size());
  EXPECT_EQ(f.request_size(), req.size());
}

TEST(RequestFramer, ContentLengthBodyAndAPipelinedRequestAfterIt) {
  const std::string first = "POST /v1/completions HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello";
  const std::string both = first + "GET /health HTTP/1.1\r\n\r\n";
  RequestFramer f({});
  EXPECT_EQ(f.advance(both), State::kComplete);
  EXPECT_EQ(f.request_size(), first.size());
  // Byte by byte it completes exactly at the body's last byte, not before.
  RequestFramer g({});
  auto [state, at] = feed_bytewise(g, both);
  EXPECT_EQ(state, State::kComplete);
  EXPECT_EQ(at, first.size());
  // The next request, from where the first ended.
  RequestFramer h({});
  EXPECT_EQ(h.advance(std::string_view(both).substr(first.size())), State::kComplete);
}

TEST(RequestFramer, BareLineFeedsDoNotEndTheHead) {
  // The HTTP library after the front skips lines ending in a bare LF; a head ended by "\n\n" is not complete for
  // it, so it is not complete for the framer either (or a worker would wait for bytes that may never come).
  RequestFramer f({});
  EXPECT_EQ(f.advance("GET / HTTP/1.1\r\nHost: x\n\n"), State::kNeedMore);
  EXPECT_EQ(f.advance("GET / HTTP/1.1\r\nHost: x\n\n\r\n"), State::kComplete);
}

TEST(RequestFramer, ChunkedBodyByteByByte) {
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  RequestFramer f({});
  auto [state, at] = feed_bytewise(f, req + "GET");
  EXPECT_EQ(state, State::kComplete);
  EXPECT_EQ(at, req.size());
  EXPECT_EQ(f.request_size(), req.size());
}

TEST(RequestFramer, ExpectContinueIsNoticedOnlyWhenABodyFollows) {
  RequestFramer f({});
  EXPECT_EQ(f.advance("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"), State::kNeedMore);
  EXPECT_TRUE(f.head_complete());
  EXPECT_TRUE(f.expects_continue());
  RequestFramer g({});
  EXPECT_EQ(g.advance("POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n"), State::kComplete);
  EXPECT_FALSE(g.expects_continue());
}

struct Refusal {
  std::string request;
  int status;
  std::string message_part;
};

TEST(RequestFramer, RefusesWhatCouldDesynchroniseOrExceedTheLimits) {
  FramerLimits limits;
  limits.max_head_bytes = 256;
  limits.max_body_bytes = 100;
  const Refusal cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both"},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400, "conflicting"},
      {"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400, "bad Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\n", 400, "bad Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, "bad Content-Length"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400, "Transfer-Encoding"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "Transfer-Encoding"},
      {"POST / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400, "folded"},
      {"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413, "larger than 100"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", 413, "larger than 100"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" + std::string(50, 'a') + "\r\n33\r\n", 413,
       "larger than 100"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "chunk-size"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(2000, '0'), 400, "too long"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX", 400, "malformed"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTrailer: x\r\n\r\n", 400, "trailers"},
      {"GET /" + std::string(300, 'a') + " HTTP/1.1\r\n\r\n", 431, "head"},
      {"GET / HTTP/1.1\r\n" + std::string(300, 'h'), 431, "head"},
  };
  for (const auto& c : cases) {
    RequestFramer f(limits);
    auto [state, at] = feed_bytewise(f, c.request);
    EXPECT_EQ(state, State::kError) << c.request.substr(0, 80);
    EXPECT_EQ(f.error_status(), c.status) << c.request.substr(0, 80);
    EXPECT_NE(f.error_message().find(c.message_part), std::string::npos) << f.error_message();
    // Whole or byte by byte, the same verdict.
    RequestFramer g(limits);
    EXPECT_EQ(g.advance(c.request), State::kError) << c.request.substr(0, 80);
  }
}

TEST(RequestFramer, HeaderNamesMustMatchExactlyAsTheLibraryReadsThem) {
  // "Content-Length :" (a space before the colon) is not the Content-Length header for the library, so the
  // framer does not wait for a body either: both see a request without one.
  RequestFramer f({});
  EXPECT_EQ(f.advance("POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\n"), State::kComplete);
  RequestFramer g({});
  EXPECT_EQ(g.advance("POST / HTTP/1.1\r\nCONTENT-LENGTH:  2 \r\n\r\nab"), State::kComplete);
  EXPECT_EQ(g.request_size(), std::string("POST / HTTP/1.1\r\nCONTENT-LENGTH:  2 \r\n\r\nab").size());
}

TEST(RequestFramer, ResetStartsTheNextRequest) {
  RequestFramer f({});
  EXPECT_EQ(f.advance("GET / HTTP/1.1\r\n\r\n"), State::kComplete);
  f.reset();
  EXPECT_EQ(f.state(), State::kNeedMore);
  EXPECT_EQ(f.advance("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n"), State::kNeedMore);
}

}  // namespace
}  // namespace pagoda
