#include "io/ggml_type.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>

namespace pagoda {
namespace {

constexpr std::array<GgmlTypeTraits, 15> kTypes = {{
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", 32, 18, false},
    {GgmlType::Q4_1, "Q4_1", 32, 20, false},
    {GgmlType::Q5_0, "Q5_0", 32, 22, false},
    {GgmlType::Q5_1, "Q5_1", 32, 24, false},
    {GgmlType::Q8_0, "Q8_0", 32, 34, true},
    {GgmlType::Q8_1, "Q8_1", 32, 36, false},
    {GgmlType::Q2_K, "Q2_K", 256, 84, false},
    {GgmlType::Q3_K, "Q3_K", 256, 110, false},
    {GgmlType::Q4_K, "Q4_K", 256, 144, false},
    {GgmlType::Q5_K, "Q5_K", 256, 176, false},
    {GgmlType::Q6_K, "Q6_K", 256, 210, false},
    {GgmlType::Q8_K, "Q8_K", 256, 292, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
}};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == type_id) return t;
  return std::nullopt;
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  assert(false && "every GgmlType enumerator has a traits row");
  return kTypes[0];
}

std::string ggml_type_name(uint32_t type_id) {
  auto t = ggml_type_traits(type_id);
  return t ? std::string(t->name) : "unknown type " + std::to_string(type_id);
}

std::optional<GgmlType> parse_ggml_type(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const auto& t : kTypes)
    if (upper == t.name && t.supported) return t.type;
  return std::nullopt;
}

}  // namespace pagoda
