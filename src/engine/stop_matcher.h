// Finds stop strings in generated text as it streams. Text that could still be the start of a stop string is
// held back, so a client never sees part of a stop string that later completes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Adds generated text and returns the text that is now final. When a stop string completes, *stopped is set
  // and the returned text ends just before the stop string's first occurrence; nothing more should be pushed.
  std::string push(std::string_view text, bool* stopped);
  // At the end of generation (no stop string): whatever is still held back.
  std::string flush();
  // The stop string that ended generation ("" while none has).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  size_t hold_ = 0;      // longest stop string minus one byte
  std::string pending_;  // held-back tail
  std::string matched_;
};

}  // namespace pagoda
