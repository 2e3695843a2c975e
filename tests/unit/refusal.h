// Refusal tests name the refusal they expect: a test that checks only !ok() also passes when an earlier check, or a
// bug, refuses for another reason, and then tests nothing.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace pagoda {

// Whether `r` (a Result or a Status) is an error whose message contains `needle`; a failure shows what came instead.
template <typename R>
::testing::AssertionResult refused_with(const R& r, std::string_view needle) {
  if (r.ok()) return ::testing::AssertionFailure() << "accepted; expected a refusal containing '" << needle << "'";
  if (r.error().message.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "refused with '" << r.error().message << "'; expected '" << needle << "'";
  return ::testing::AssertionSuccess();
}

}  // namespace pagoda
