// libFuzzer target: untrusted JSON Schemas (response_format, json_schema) through the schema-to-GBNF converter,
// the GBNF parser and the matcher, which then reads a few JSON texts. Conversion may fail; the GBNF it produces
// must parse (a failure there is a converter bug, reported as a crash); nothing may crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "util/json_depth.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto schema = nlohmann::ordered_json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded() || pagoda::json_nests_deeper_than(schema, 256)) return 0;  // the server refuses these
  auto gbnf = pagoda::grammar::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return 0;
  pagoda::grammar::GrammarLimits limits;
  limits.max_rules = 20'000;
  limits.max_elems = 200'000;
  auto g = pagoda::grammar::parse_gbnf(*gbnf, "root", limits);
  if (!g.ok()) {
    // Only the size limits may stop a converted schema; anything else is a converter bug.
    if (g.error().message.find("more than") == std::string::npos &&
        g.error().message.find("left-recursive") == std::string::npos &&
        g.error().message.find("larger than") == std::string::npos &&
        g.error().message.find("repetition count") == std::string::npos)
      std::abort();
    return 0;
  }
  pagoda::grammar::GrammarMatcher m(*g);
  for (std::string_view text : {"{}", "[]", "null", "\"a\"", "12", "{\"a\": [1, true]}", "-0.5e3"}) (void)m.accepts(text);
  return 0;
}
