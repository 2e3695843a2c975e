#include "loadgen/sse_parser.h"

namespace pagoda::loadgen {

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
  for (char c : bytes) {
    if (!started_) {
      // The stream may begin with a byte-order mark, which is not part of the first line. Its bytes are held in
      // line_ until they either complete the mark (dropped) or turn out not to be one (kept as text).
      static constexpr std::string_view kBom = "\xEF\xBB\xBF";
      if (c == kBom[line_.size()]) {
        line_ += c;
        if (line_.size() == kBom.size()) {
          line_.clear();
          started_ = true;
        }
        continue;
      }
      started_ = true;
    }
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      on_line(line_, events);
      line_.clear();
    } else {
      line_ += c;
    }
  }
}

void SseParser::on_line(std::string_view line, std::vector<std::string>& events) {
  if (line.empty()) {  // blank line: dispatch
    if (!data_.empty()) {
      data_.pop_back();  // the '\n' after the last data line
      events.push_back(std::move(data_));
      data_.clear();
    }
    return;
  }
  if (line.front() == ':') return;  // comment (servers send these as keep-alives)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    data_.append(value);
    data_ += '\n';
  }
}

}  // namespace pagoda::loadgen
