// Every golden rendering in shared/templates/renderings.jsonl: 60 real chat templates × 16 conversations ×
// add_generation_prompt false/true, rendered by Python's jinja2 the way transformers' apply_chat_template does
// (shared/templates/render.py). pagoda's interpreter must give the same bytes where jinja2 rendered, and fail where
// jinja2 raised (with the same text when the template itself raised through raise_exception).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "jinja/template.h"

namespace pagoda::jinja {
namespace {

using Json = nlohmann::ordered_json;

const std::string kDir = std::string(PAGODA_SHARED_DIR) + "/templates";

// Templates whose renderings are known not to match yet, with the reason. Empty: every rendering matches.
const std::map<std::string, std::string> kKnownFailures = {};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Where two renderings first differ, with some text around it from each.
std::string describe_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t line = static_cast<size_t>(std::count(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(i), '\n')) + 1;
  const size_t from = i > 60 ? i - 60 : 0;
  auto excerpt = [&](const std::string& s) { return Json(s.substr(from, std::min<size_t>(s.size() - std::min(s.size(), from), 140)))
                                             .dump(-1, ' ', false, Json::error_handler_t::replace); };
  std::ostringstream out;
  out << "first difference at byte " << i << " (line " << line << "); want " << want.size() << " bytes, got "
      << got.size() << "\n  want: " << excerpt(want) << "\n  got:  " << excerpt(got);
  return out.str();
}

struct Fixture {
  std::map<std::string, Json> conversations;      // by id
  std::map<std::string, Result<Template>> parsed;  // by template family
  std::vector<Json> renderings;
};

const Fixture& fixture() {
  static const Fixture* f = [] {
    auto* fx = new Fixture;
    const Json convs = Json::parse(read_file(kDir + "/conversations.json"));
    for (const Json& c : convs.at("conversations")) fx->conversations[c.at("id").get<std::string>()] = c;
    for (const Json& m : Json::parse(read_file(kDir + "/manifest.json"))) {
      const std::string source = read_file(kDir + "/" + m.at("file").get<std::string>());
      fx->parsed.emplace(m.at("family").get<std::string>(), parse_template(source));
    }
    std::istringstream lines(read_file(kDir + "/renderings.jsonl"));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) fx->renderings.push_back(Json::parse(line));
    return fx;
  }();
  return *f;
}

// The variables render.py passes: messages, tools (None when the conversation has none), documents=None,
// add_generation_prompt, then bos_token / eos_token and the conversation's template_kwargs (the line's
// "variables", less its tools_given note).
Value context_for(const Json& line, const Json& conversation) {
  Json vars = Json::object();
  vars["messages"] = conversation.at("messages");
  vars["tools"] = conversation.contains("tools") ? conversation.at("tools") : Json(nullptr);
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = line.at("add_generation_prompt");
  for (const auto& [k, v] : line.at("variables").items())
    if (k != "tools_given") vars[k] = v;
  auto value = Value::from_json(vars);
  EXPECT_TRUE(value.ok());
  return value.ok() ? *value : Value();
}

RenderOptions golden_options() {
  RenderOptions o;
  o.now = [] { return make_local_time(2025, 1, 15, 10, 30, 0); };  // render.py's FIXED_NOW
  return o;
}

TEST(ChatTemplateRenderings, EveryGoldenRenderingMatchesJinja2) {
  const Fixture& fx = fixture();
  ASSERT_EQ(fx.renderings.size(), 1920u);
  ASSERT_EQ(fx.parsed.size(), 60u);
  std::map<std::string, int> failures;  // by template
  int matched = 0;
  for (const Json& line : fx.renderings) {
    const std::string family = line.at("template").get<std::string>();
    const std::string conv_id = line.at("conversation").get<std::string>();
    const bool agp = line.at("add_generation_prompt").get<bool>();
    const std::string where = family + " / " + conv_id + (agp ? " / add_generation_prompt" : "");
    const auto& tmpl = fx.parsed.at(family);
    const bool known = kKnownFailures.count(family) > 0;
    auto fail = [&](const std::string& message) {
      ++failures[family];
      if (!known && failures[family] <= 3) ADD_FAILURE() << where << ": " << message;
    };
    if (!tmpl.ok()) {
      if (line.at("ok").get<bool>()) {
        fail("pagoda cannot parse the template: " + tmpl.error().message);
      } else {
        ++matched;
      }
      continue;
    }
    const auto out = tmpl->render(context_for(line, fx.conversations.at(conv_id)), golden_options());
    if (line.at("ok").get<bool>()) {
      const std::string want = line.at("output").get<std::string>();
      if (!out.ok()) {
        fail("pagoda failed where jinja2 rendered: [" + out.error().code + "] " + out.error().message);
      } else if (*out != want) {
        fail(describe_difference(want, *out));
      } else {
        ++matched;
      }
      continue;
    }
    const std::string error_type = line.at("error_type").get<std::string>();
    const std::string error = line.at("error").get<std::string>();
    if (out.ok()) {
      fail("pagoda rendered where jinja2 raised " + error_type + ": " + error);
    } else if (error_type == "TemplateError" && out.error().message != error) {
      fail("raise_exception message differs: want " + Json(error).dump() + ", got " + Json(out.error().message).dump());
    } else {
      ++matched;
    }
  }
  std::ostringstream summary;
  for (const auto& [family, n] : failures) summary << "\n  " << family << ": " << n << " rendering(s) differ";
  std::cout << "[ jinja ] " << matched << " of " << fx.renderings.size() << " golden renderings match" << summary.str()
            << "\n";
  for (const auto& [family, n] : failures)
    EXPECT_TRUE(kKnownFailures.count(family) > 0) << family << ": " << n << " rendering(s) differ";
  for (const auto& [family, reason] : kKnownFailures)
    EXPECT_TRUE(failures.count(family) > 0) << family << " is listed as failing (" << reason << ") but now matches";
}

}  // namespace
}  // namespace pagoda::jinja
