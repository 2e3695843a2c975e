#include "engine/stop_matcher.h"

#include <algorithm>

namespace pagoda {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
  for (const auto& s : stops_) hold_ = std::max(hold_, s.size() - 1);
}

std::string StopMatcher::push(std::string_view text, bool* stopped) {
  *stopped = false;
  pending_.append(text);
  // The earliest occurrence of any stop string (pending_ held none before this text arrived).
  size_t first = std::string::npos;
  for (const auto& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < first) {
      first = at;
      matched_ = s;
    }
  }
  if (first != std::string::npos) {
    *stopped = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  if (pending_.size() <= hold_) return {};
  // Release all but the last hold_ bytes, never splitting a UTF-8 character.
  size_t cut = pending_.size() - hold_;
  while (cut > 0 && cut < pending_.size() && (static_cast<unsigned char>(pending_[cut]) & 0xC0) == 0x80) --cut;
  std::string out = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace pagoda
