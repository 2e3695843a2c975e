#include "server/api_keys.h"

#include <fstream>
#include <sstream>

namespace pagoda {

// Constant-time in the contents (not the lengths) of the two strings.
bool ApiKeys::equal_constant_time(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

namespace {

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return {};
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

}  // namespace

Result<ApiKeys> ApiKeys::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read the API keys file '" + path + "'");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), path);
}

Result<ApiKeys> ApiKeys::parse(std::string_view text, const std::string& source_name) {
  ApiKeys keys;
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const size_t sp = line.find_first_of(" \t");
    const std::string where = source_name + ":" + std::to_string(line_no);
    if (sp == std::string_view::npos) return make_error(where + ": expected 'TENANT KEY'");
    const std::string tenant(line.substr(0, sp));
    const std::string key(trim(line.substr(sp)));
    if (key.find_first_of(" \t") != std::string::npos) return make_error(where + ": expected 'TENANT KEY'");
    if (keys.tenant_of(key)) return make_error(where + ": the key is listed twice");
    keys.add(key, tenant);
  }
  if (keys.empty()) return make_error(source_name + " holds no keys");
  return keys;
}

void ApiKeys::add(std::string key, std::string tenant) { entries_.push_back({std::move(key), std::move(tenant)}); }

std::optional<std::string> ApiKeys::tenant_of(std::string_view key) const {
  std::optional<std::string> found;
  for (const Entry& e : entries_)  // no early exit: every key is compared
    if (equal_constant_time(e.key, key)) found = e.tenant;
  return found;
}

}  // namespace pagoda
