#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

namespace pagoda::loadgen {
namespace {

// Feeds `stream` in pieces of `piece` bytes (0: all at once) and returns every event's data.
std::vector<std::string> parse(const std::string& stream, size_t piece = 0) {
  SseParser parser;
  std::vector<std::string> events;
  if (piece == 0) piece = stream.size();
  for (size_t i = 0; i < stream.size(); i += piece) parser.feed(std::string_view(stream).substr(i, piece), events);
  return events;
}

const std::string kStream =
    "\xEF\xBB\xBF"                             // byte-order mark
    ": keep-alive comment\n"                   // ignored
    "data: {\"a\":1}\n\n"                      // plain event
    "event: message\r\ndata:no-space\r\n\r\n"  // CRLF, another field, no space after the colon
    "data: line one\rdata: line two\r\r"       // CR only; two data lines join with \n
    "id: 7\nretry: 100\n\n"                    // an event without data dispatches nothing
    "data\n\n"                                 // a field name alone: empty data
    "data:  two spaces\n\n"                    // only one space is dropped
    "data: [DONE]\n\n"
    "data: unterminated";  // never dispatched

const std::vector<std::string> kEvents = {"{\"a\":1}", "no-space", "line one\nline two", "", " two spaces", "[DONE]"};

TEST(SseParser, ParsesAWholeStream) { EXPECT_EQ(parse(kStream), kEvents); }

TEST(SseParser, SameEventsWhateverThePieces) {
  for (size_t piece : {1, 2, 3, 5, 7, 13, 64}) EXPECT_EQ(parse(kStream, piece), kEvents) << "piece " << piece;
}

TEST(SseParser, CrLfSplitAcrossPiecesIsOneLineBreak) {
  SseParser parser;
  std::vector<std::string> events;
  parser.feed("data: x\r", events);
  parser.feed("\n", events);  // completes the CRLF, not a blank line
  EXPECT_TRUE(events.empty());
  parser.feed("\r\n", events);
  EXPECT_EQ(events, std::vector<std::string>{"x"});
}

TEST(SseParser, EventsArriveAsSoonAsTheyAreComplete) {
  SseParser parser;
  std::vector<std::string> events;
  parser.feed("data: 1\n\ndata: 2\n", events);
  EXPECT_EQ(events, std::vector<std::string>{"1"});
  parser.feed("\n", events);
  EXPECT_EQ(events, (std::vector<std::string>{"1", "2"}));
}

TEST(SseParser, BytesLikeAByteOrderMarkLaterAreText) {
  EXPECT_EQ(parse("data: \xEF\xBB\xBF!\n\n"), std::vector<std::string>{"\xEF\xBB\xBF!"});
  // "\xEF" followed by "data" is not a data field.
  EXPECT_EQ(parse(std::string("\xEF") + "data: x\n\n", 1), std::vector<std::string>{});
}

}  // namespace
}  // namespace pagoda::loadgen
