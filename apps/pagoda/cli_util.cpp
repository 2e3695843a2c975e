#include <cmath>
#include <cstdio>
#include <string>

#include "commands.h"
#include "util/thread_pool.h"

namespace pagoda::cli {

int fail(const std::string& message) {
  std::fprintf(stderr, "pagoda: error: %s\n", message.c_str());
  return 1;
}

std::string json_line(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (...) {
          return "'" + text + "' is not a number";
        }
        if (used != text.size()) return "'" + text + "' is not a number";
        if (!std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' is out of range [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) +
                 "]";
        return std::string();
      },
      "FLOAT in [" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]");
}

void add_threads_flag(CLI::App& cmd, int& threads) {
  threads = ThreadPool::default_num_threads();
  cmd.add_option("-t,--threads", threads, "Worker threads (default: all cores)")->check(CLI::Range(1, 1024));
}

}  // namespace pagoda::cli
