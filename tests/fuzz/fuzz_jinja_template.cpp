// libFuzzer target: untrusted chat templates (they come from model files) through pagoda's Jinja interpreter.
// The input is split at the first NUL byte: the template source, then an optional JSON object of render variables
// (messages, tools, ...); without one, a small fixed conversation is used. Parsing and rendering may fail but must
// not crash, hang, leak or trip the sanitizers; the bounds are tightened so each input runs quickly.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "jinja/template.h"

namespace {

const pagoda::jinja::Value& default_context() {
  static const pagoda::jinja::Value* v = [] {
    const auto j = nlohmann::ordered_json::parse(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi \u00e9 there"},
        {"role": "assistant", "content": null, "tool_calls": [
          {"type": "function", "function": {"name": "f", "arguments": {"x": [1, 2.5, true]}}}]},
        {"role": "tool", "content": "42"}
      ],
      "tools": [{"type": "function", "function": {"name": "f", "description": "d",
                 "parameters": {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "number"}}},
                                "required": ["x"]}}}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
    })");
    return new pagoda::jinja::Value(*pagoda::jinja::Value::from_json(j));
  }();
  return *v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  auto tmpl = pagoda::jinja::parse_template(source);
  if (!tmpl.ok()) return 0;
  pagoda::jinja::RenderOptions options;
  options.max_output_bytes = 1 << 20;
  options.max_steps = 200'000;
  options.max_call_depth = 40;
  options.now = [] { return pagoda::jinja::make_local_time(2025, 1, 15, 10, 30, 0); };
  if (nul != std::string_view::npos) {
    const auto vars = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, /*allow_exceptions=*/false);
    if (vars.is_object()) {
      auto context = pagoda::jinja::Value::from_json(vars);
      if (context.ok()) (void)tmpl->render(*context, options);
      return 0;
    }
  }
  (void)tmpl->render(default_context(), options);
  return 0;
}
