#include "jinja/template.h"

#include <new>

#include "jinja/ast.h"
#include "jinja/jinja_error.h"
#include "jinja/parser.h"
#include "jinja/renderer.h"

namespace pagoda::jinja {

std::tm make_local_time(int year, int month, int day, int hour, int minute, int second) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  // timegm normalises the fields and fills in tm_wday / tm_yday without involving the time zone.
  const std::time_t t = timegm(&tm);
  gmtime_r(&t, &tm);
  return tm;
}

Result<Template> parse_template(std::string_view source) {
  try {
    Template t;
    t.tree_ = std::make_shared<const ast::Template>(parse(source));
    return t;
  } catch (const JinjaError& e) {
    return make_coded_error(e.kind(), e.what());
  } catch (const std::bad_alloc&) {
    return make_coded_error("MemoryError", "out of memory while parsing the template");
  } catch (const std::exception& e) {
    return make_coded_error("InternalError", std::string("template parser failed: ") + e.what());
  }
}

Result<std::string> Template::render(const Value& context, const RenderOptions& options) const {
  if (!tree_) return make_coded_error("InternalError", "rendering an empty Template");
  if (!context.is_dict() && !context.is_undefined() && !context.is_none())
    return make_coded_error("TypeError", "the render context must be a dict");
  if (nesting_depth(context) > kMaxValueDepth)
    return make_coded_error("LimitExceeded", "render variables nested too deeply");
  try {
    Renderer renderer(options, context);
    return renderer.render(*tree_);
  } catch (const JinjaError& e) {
    return make_coded_error(e.kind(), e.what());
  } catch (const std::bad_alloc&) {
    return make_coded_error("MemoryError", "out of memory while rendering the template");
  } catch (const std::exception& e) {
    return make_coded_error("InternalError", std::string("template rendering failed: ") + e.what());
  }
}

}  // namespace pagoda::jinja
