// Result<T>: a value or an Error that names the problem. Library code returns these instead of
// throwing; callers at the edge (CLI, HTTP handlers) turn an Error into a message and an exit code.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace pagoda {

struct Error {
  std::string message;
  std::string param;  // the input field the error is about, when there is one (HTTP errors report it)
  std::string code;   // a machine-readable reason, where a caller branches on it (anchor checks: "bad_signature")
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : data_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<T>(data_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(data_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(data_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<Error>(data_);
  }

 private:
  std::variant<T, Error> data_;
};

// Status: success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  static Status success() { return Status(); }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

inline Error make_error(std::string message) { return Error{std::move(message), {}, {}}; }
inline Error make_field_error(std::string param, std::string message) {
  return Error{std::move(message), std::move(param), {}};
}
inline Error make_coded_error(std::string code, std::string message) {
  return Error{std::move(message), {}, std::move(code)};
}

}  // namespace pagoda

// Propagates an error from an expression returning Status or Result<T>.
#define PAGODA_RETURN_IF_ERROR(expr)                         \
  do {                                                       \
    auto pagoda_status_ = (expr);                            \
    if (!pagoda_status_.ok()) return pagoda_status_.error(); \
  } while (0)
