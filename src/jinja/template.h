// pagoda's Jinja interpreter: renders Hugging Face chat templates byte for byte like Python's jinja2 does when
// transformers' apply_chat_template sets it up (ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks,
// the loopcontrols extension, the {% generation %} tag, a tojson filter that is json.dumps, and the globals
// raise_exception and strftime_now).
//
// Templates come from untrusted model files: parsing and rendering never throw and never crash; nesting depth,
// call depth, output size and total work are bounded (RenderOptions), and a template that breaks a bound fails
// with an Error.
//
//   auto t = pagoda::jinja::parse_template(source);
//   if (!t.ok()) ...;
//   pagoda::jinja::Dict vars;
//   vars.set("messages", pagoda::jinja::Value::from_json(messages_json));
//   auto text = t->render(pagoda::jinja::Value::dict(std::move(vars)));
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "jinja/value.h"
#include "util/result.h"

namespace pagoda::jinja {

namespace ast {
struct Template;
}

struct RenderOptions {
  size_t max_output_bytes = size_t{16} << 20;  // also bounds every string a template builds
  int max_call_depth = 100;                    // nested macro calls (recursive macros render JSON schemas)
  uint64_t max_steps = 50'000'000;             // expression evaluations and loop iterations, all told
  // strftime_now's clock: the local time to format. Empty: the real clock (std::localtime of now).
  std::function<std::tm()> now;
};

// A broken-down local time for RenderOptions::now (month 1-12); fills in the weekday and day of the year.
std::tm make_local_time(int year, int month, int day, int hour, int minute, int second);

class Template {
 public:
  // context: a dict of the template's variables (messages, tools, add_generation_prompt, bos_token, ...). Errors:
  // Error::message is jinja2's message (for raise_exception, the template's own text), Error::code the name of
  // the Python exception jinja2 raises there ("TemplateError", "TypeError", "UndefinedError", ...).
  Result<std::string> render(const Value& context, const RenderOptions& options = {}) const;

 private:
  friend Result<Template> parse_template(std::string_view source);
  std::shared_ptr<const ast::Template> tree_;
};

// Compiles a template; an Error (code "TemplateSyntaxError" or "TemplateAssertionError") where jinja2 would fail to
// compile it.
Result<Template> parse_template(std::string_view source);

}  // namespace pagoda::jinja
