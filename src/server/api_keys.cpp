#include "server/api_keys.h"

#include <charconv>
#include <cmath>
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

std::string_view trim_spaces(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return {};
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

bool parse_count(std::string_view text, int32_t* out) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > (int64_t{1} << 30)) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

// One `name=value` option of a key line into `limits`; an error names what is wrong with it.
Status parse_limit(std::string_view option, TenantLimits* limits) {
  const size_t eq = option.find('=');
  if (eq == std::string_view::npos)
    return make_error("expected 'TENANT KEY [OPTION=VALUE ...]', found '" + std::string(option) + "'");
  const std::string_view name = option.substr(0, eq), value = option.substr(eq + 1);
  const std::string quoted = "'" + std::string(option) + "'";
  int32_t* count = name == "max_running"     ? &limits->max_running
                   : name == "max_waiting"   ? &limits->max_waiting
                   : name == "max_kv_blocks" ? &limits->max_kv_blocks
                   : name == "rpm"           ? &limits->requests_per_minute
                                             : nullptr;
  if (count) {
    if (!parse_count(value, count)) return make_error(quoted + ": the value must be a whole number >= 1");
    return {};
  }
  if (name == "kv_share") {
    const std::string v(value);
    char* end = nullptr;
    const double share = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(share) || share <= 0 || share > 1)
      return make_error(quoted + ": kv_share must be a number in (0, 1]");
    limits->kv_share = share;
    return {};
  }
  return make_error("unknown option " + quoted +
                    " (the options are max_running, max_waiting, max_kv_blocks, kv_share and rpm)");
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
    line = trim_spaces(line);
    if (line.empty()) continue;
    const size_t sp = line.find_first_of(" \t");
    const std::string where = source_name + ":" + std::to_string(line_no);
    if (sp == std::string_view::npos) return make_error(where + ": expected 'TENANT KEY'");
    const std::string tenant(line.substr(0, sp));
    std::string_view rest = trim_spaces(line.substr(sp));
    const size_t key_end = rest.find_first_of(" \t");
    const std::string key(rest.substr(0, key_end));
    rest = key_end == std::string_view::npos ? std::string_view{} : trim_spaces(rest.substr(key_end));
    TenantLimits limits;
    while (!rest.empty()) {
      const size_t end = rest.find_first_of(" \t");
      if (Status st = parse_limit(rest.substr(0, end), &limits); !st.ok()) return make_error(where + ": " + st.error().message);
      rest = end == std::string_view::npos ? std::string_view{} : trim_spaces(rest.substr(end));
    }
    if (limits.max_kv_blocks > 0 && limits.kv_share > 0)
      return make_error(where + ": give max_kv_blocks or kv_share, not both");
    if (keys.tenant_of(key)) return make_error(where + ": the key is listed twice");
    if (limits.any()) {
      auto [it, inserted] = keys.limits_.emplace(tenant, limits);
      if (!inserted && !(it->second == limits))
        return make_error(where + ": tenant '" + tenant + "' already has different limits on an earlier line");
    }
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
