// Streamed tool calls: fed a reply a piece at a time, the stream sends each call's header once its name is known,
// then its arguments as they grow; the fragments join to the model's own arguments text, and what the final parse
// finds but could not stream is sent whole at the end.
#include "api/tool_call_stream.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

namespace pagoda {
namespace {

struct Collected {
  std::vector<ToolCallDelta> deltas;
  std::map<int32_t, std::string> names, args;
  std::map<int32_t, int> fragments;
  size_t updates_with_args = 0;
};

// Feeds `reply` in pieces of `step` bytes, then finishes with the final parse.
Collected stream(ToolCallFormat format, std::string_view reply, size_t step, bool parallel = true) {
  ToolCallStream s(format, parallel);
  Collected c;
  auto take = [&](const std::vector<ToolCallDelta>& ds) {
    for (const ToolCallDelta& d : ds) {
      if (d.header) {
        EXPECT_FALSE(c.names.count(d.index)) << "one header per call";
        EXPECT_EQ(c.names.size(), static_cast<size_t>(d.index)) << "calls start in order";
        c.names[d.index] = d.name;
      } else {
        EXPECT_TRUE(c.names.count(d.index)) << "arguments after the header";
        EXPECT_FALSE(d.arguments.empty());
        c.args[d.index] += d.arguments;
        ++c.fragments[d.index];
      }
      c.deltas.push_back(d);
    }
  };
  for (size_t n = step; n < reply.size() + step; n += step) {
    const auto ds = s.update(reply.substr(0, std::min(n, reply.size())));
    for (const auto& d : ds)
      if (!d.header) {
        ++c.updates_with_args;
        break;
      }
    take(ds);
  }
  take(s.finish(reply, parse_tool_calls(format, reply)));
  return c;
}

TEST(ToolCallStream, HermesArgumentsStreamAsTheyGrowAndJoinToTheModelsText) {
  const std::string reply =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa}ris \\\"{x\", \"unit\": \"celsius\"}}"
      "\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"cats\", \"limit\": 3}}\n"
      "</tool_call>";
  for (size_t step : {1, 3, 7}) {
    const Collected c = stream(ToolCallFormat::kHermes, reply, step);
    ASSERT_EQ(c.names.size(), 2u) << step;
    EXPECT_EQ(c.names.at(0), "get_weather");
    EXPECT_EQ(c.names.at(1), "search");
    EXPECT_EQ(c.args.at(0), R"({"city": "Pa}ris \"{x", "unit": "celsius"})") << "braces and quotes inside strings";
    EXPECT_EQ(c.args.at(1), R"({"query": "cats", "limit": 3})");
    EXPECT_GT(c.fragments.at(0), 3) << step;
    EXPECT_GT(c.updates_with_args, 6u) << step;
    // Each call's header comes before any of its fragments, and call 0 is complete before call 1 starts.
    EXPECT_TRUE(c.deltas.front().header);
  }
}

TEST(ToolCallStream, MistralAndLlama3Formats) {
  const Collected m = stream(ToolCallFormat::kMistral,
                             "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": 2}]}}, "
                             "{\"name\": \"b\", \"arguments\": {}}]",
                             2);
  ASSERT_EQ(m.names.size(), 2u);
  EXPECT_EQ(m.args.at(0), R"({"x": [1, {"y": 2}]})");
  EXPECT_EQ(m.args.at(1), "{}");
  const Collected l = stream(ToolCallFormat::kLlama3,
                             "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"query\": \"dogs\"}}", 2);
  ASSERT_EQ(l.names.size(), 1u);
  EXPECT_EQ(l.names.at(0), "search");
  EXPECT_EQ(l.args.at(0), R"({"query": "dogs"})");
  EXPECT_GT(l.fragments.at(0), 3);
}

TEST(ToolCallStream, CallsThatCannotStreamAreSentWholeAtTheEnd) {
  // Arguments before the name, and arguments as a JSON string: the final parse's reading, in one piece.
  const std::string reply =
      "<tool_call>\n{\"arguments\": {\"q\": 1}, \"name\": \"late\"}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"str\", \"arguments\": \"{\\\"q\\\": 2}\"}\n</tool_call>";
  const Collected c = stream(ToolCallFormat::kHermes, reply, 1);
  ASSERT_EQ(c.names.size(), 2u);
  EXPECT_EQ(c.names.at(0), "late");
  EXPECT_EQ(c.fragments.at(0), 1);
  EXPECT_EQ(nlohmann::json::parse(c.args.at(0)), nlohmann::json::parse(R"({"q": 1})"));
  EXPECT_EQ(c.names.at(1), "str");
  EXPECT_EQ(c.fragments.at(1), 1);
  EXPECT_EQ(c.args.at(1), R"({"q": 2})");
}

TEST(ToolCallStream, OnlyTheFirstCallWithoutParallelAndNothingWithoutACall) {
  const std::string two = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": 1}}, {\"name\": \"b\", \"arguments\": {}}]";
  ToolCallStream s(ToolCallFormat::kMistral, /*parallel=*/false);
  const auto ds = s.update(two);
  for (const auto& d : ds) EXPECT_EQ(d.index, 0);
  EXPECT_EQ(s.calls_started(), 1u);
  const Collected none = stream(ToolCallFormat::kHermes, "Just text, {\"name\": \"x\", \"arguments\": {}} here.", 1);
  EXPECT_TRUE(none.deltas.empty());
}

TEST(ToolCallStream, AReplyCutOffKeepsItsFragments) {
  const std::string cut = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"ca";
  ToolCallStream s(ToolCallFormat::kHermes, true);
  std::string args;
  for (size_t n = 1; n <= cut.size(); ++n)
    for (const auto& d : s.update(std::string_view(cut).substr(0, n))) args += d.arguments;
  for (const auto& d : s.finish(cut, parse_tool_calls(ToolCallFormat::kHermes, cut))) args += d.arguments;
  EXPECT_EQ(args, R"({"query": "ca)");
  EXPECT_EQ(s.calls_started(), 1u);
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kHermes, cut).calls.empty());
}

TEST(ToolCallStream, ScanFindsObjectsAndTheirArgumentSpans) {
  const std::string t = "<tool_call> {\"name\": \"f\", \"other\": [1, \"]\"], \"arguments\": {\"a\": \"}\"}} </tool_call>";
  const auto scans = scan_tool_calls(ToolCallFormat::kHermes, t);
  ASSERT_EQ(scans.size(), 1u);
  const ToolCallScan& s = scans[0];
  EXPECT_TRUE(s.has_name);
  EXPECT_TRUE(s.name_first);
  EXPECT_TRUE(s.args_object);
  EXPECT_EQ(t.substr(s.args_begin, s.args_end - s.args_begin), R"({"a": "}"})");
  EXPECT_EQ(t[s.object_end - 1], '}');
  EXPECT_EQ(t.substr(s.object_end, 2), " <");
}

}  // namespace
}  // namespace pagoda

namespace pagoda {
namespace {

TEST(ToolCallStream, Llama4ArgumentsStreamAndQwen3CoderCallsGoOutAsTheirBlocksClose) {
  const std::string llama4 = "<|python_start|><|python_end|>{\"name\": \"f\", \"parameters\": {\"a\": \"x y\"}}"
                             "{\"name\": \"g\", \"parameters\": {\"b\": 2}}";
  for (size_t step : {1, 5}) {
    const Collected c = stream(ToolCallFormat::kLlama4, llama4, step);
    ASSERT_EQ(c.names.size(), 2u);
    EXPECT_EQ(c.args.at(0), "{\"a\": \"x y\"}");
    EXPECT_EQ(c.args.at(1), "{\"b\": 2}");
    EXPECT_GT(c.updates_with_args, 2) << "the arguments stream";
  }
  const std::string xml = "<tool_call>\n<function=f>\n<parameter=a>\nx y\n</parameter>\n</function>\n</tool_call>\n"
                          "<tool_call>\n<function=g>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>";
  ToolCallStream s(ToolCallFormat::kQwen3Coder, true);
  const size_t first_close = xml.find("</tool_call>") + 12;
  EXPECT_TRUE(s.update(xml.substr(0, first_close - 1)).empty()) << "nothing before the block closes";
  const auto first = s.update(xml.substr(0, first_close));
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(first[0].header);
  EXPECT_EQ(first[0].name, "f");
  EXPECT_EQ(first[1].arguments, R"({"a":"x y"})");
  const auto rest = s.finish(xml, parse_tool_calls(ToolCallFormat::kQwen3Coder, xml));
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].index, 1);
  EXPECT_EQ(rest[1].arguments, R"({"b":2})");
}

}  // namespace
}  // namespace pagoda
