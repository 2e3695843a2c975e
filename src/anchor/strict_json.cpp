#include "anchor/strict_json.h"

#include <set>
#include <string>
#include <vector>

namespace pagoda {

using json = nlohmann::json;

Result<json> parse_strict_json(std::string_view text, int max_depth) {
  std::vector<std::set<std::string>> open_objects;  // keys seen in each object being parsed, innermost last
  std::string problem;
  int depth = 0;
  auto check = [&](int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++depth > max_depth && problem.empty()) problem = "nested deeper than " + std::to_string(max_depth);
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        --depth;
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second &&
            problem.empty())
          problem = "duplicate key '" + parsed.get<std::string>() + "'";
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  // A deeply nested document would recurse in the parser before any callback could stop it: refuse it from its
  // bytes first (brackets outside strings).
  int nesting = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++nesting > max_depth) return make_error("JSON nested deeper than " + std::to_string(max_depth));
    } else if (c == '}' || c == ']') {
      --nesting;
    }
  }
  json value;
  try {
    value = json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {
    return make_error(std::string("not valid JSON: ") + e.what());
  }
  if (!problem.empty()) return make_error("JSON with a " + problem);
  return value;
}

Status expect_exact_keys(const json& object, std::initializer_list<std::string_view> keys, const std::string& what) {
  if (!object.is_object()) return make_error(what + " must be a JSON object");
  for (std::string_view k : keys)
    if (!object.contains(std::string(k))) return make_error(what + " lacks '" + std::string(k) + "'");
  for (const auto& [k, v] : object.items()) {
    bool known = false;
    for (std::string_view want : keys) known |= k == want;
    if (!known) return make_error(what + " has an unknown key '" + k + "'");
  }
  return Status::success();
}

}  // namespace pagoda
