// JSON for signed artifacts and trust roots: RFC 8259 text with no duplicate object keys (nlohmann-json keeps the
// last of two equal keys without a word, which would let a signer and a verifier read different values), nesting
// at most max_depth deep, and one value only (trailing bytes are an error).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "util/result.h"

namespace pagoda {

Result<nlohmann::json> parse_strict_json(std::string_view text, int max_depth = 16);

// Checks that `object` is a JSON object whose keys are exactly `keys` (all present, no other); `what` names it
// in the message.
Status expect_exact_keys(const nlohmann::json& object, std::initializer_list<std::string_view> keys,
                         const std::string& what);

}  // namespace pagoda
