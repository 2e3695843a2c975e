#include "server/http_errors.h"

#include <httplib.h>

#include "api/openai_response.h"

namespace pagoda {

using json = nlohmann::json;

json error_body(int status, const std::string& message, const std::string& param, const char* code) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 403 ? "permission_error"
                     : status == 404 ? "not_found_error"
                     : status == 409 ? "conflict_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code ? json(code) : json(nullptr)}}}};
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& param,
                const char* code) {
  res.status = status;
  res.set_content(to_wire(error_body(status, message, param, code)), "application/json");
}

}  // namespace pagoda
