// OpenAI's error shape for every HTTP error pagoda answers: {"error": {"message", "type", "param", "code"}}, the
// type following the status.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace httplib {
struct Response;
}  // namespace httplib

namespace pagoda {

nlohmann::json error_body(int status, const std::string& message, const std::string& param = {},
                          const char* code = nullptr);
void send_error(httplib::Response& res, int status, const std::string& message, const std::string& param = {},
                const char* code = nullptr);

}  // namespace pagoda
