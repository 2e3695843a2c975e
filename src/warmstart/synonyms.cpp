#include "warmstart/synonyms.h"

#include <cctype>

namespace pagoda::warmstart {

std::string apply_synonyms(const std::string& text, const std::vector<std::pair<std::string, std::string>>& synonyms,
                           Rng& rng) {
  std::string out = text;
  for (const auto& [a, b] : synonyms) {
    size_t pos = 0;
    while ((pos = out.find(a, pos)) != std::string::npos) {
      const bool left = pos == 0 || !std::isalpha(static_cast<unsigned char>(out[pos - 1]));
      const bool right = pos + a.size() >= out.size() || !std::isalpha(static_cast<unsigned char>(out[pos + a.size()]));
      if (left && right && rng.next_double() < 0.5) {
        out.replace(pos, a.size(), b);
        pos += b.size();
      } else {
        pos += a.size();
      }
    }
  }
  return out;
}

}  // namespace pagoda::warmstart
