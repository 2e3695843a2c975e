#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "commands.h"
#include "util/thread_pool.h"

namespace pagoda::cli {

int fail(const std::string& message) {
  // Messages can quote names from untrusted files: escape control bytes so the error stays one plain line.
  std::string line;
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      line += buf;
    } else {
      line += static_cast<char>(c);
    }
  }
  std::fprintf(stderr, "pagoda: error: %s\n", line.c_str());
  return 1;
}

std::string json_line(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::optional<double> parse_number(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return v;
}

CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const auto parsed = parse_number(text);
        if (!parsed) return "'" + text + "' is not a number";
        const double v = *parsed;
        if (!std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' is out of range [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) +
                 "]";
        return std::string();
      },
      "FLOAT in [" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]");
}

CLI::Validator uint64_text() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not a non-negative integer";
        errno = 0;
        (void)std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return "'" + text + "' is larger than 18446744073709551615";
        return std::string();
      },
      "UINT64");
}

void add_threads_flag(CLI::App& cmd, int& threads) {
  threads = ThreadPool::default_num_threads();
  cmd.add_option("-t,--threads", threads, "Worker threads (default: all cores)")->check(CLI::Range(1, 1024));
}

}  // namespace pagoda::cli
