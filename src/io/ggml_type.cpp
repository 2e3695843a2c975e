#include "io/ggml_type.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>

namespace pagoda {
namespace {

constexpr std::array kTypes = {
    GgmlTypeTraits{GgmlType::F32, "F32", 1, 4, true},
    GgmlTypeTraits{GgmlType::F16, "F16", 1, 2, true},
    GgmlTypeTraits{GgmlType::Q4_0, "Q4_0", 32, 18, true},
    GgmlTypeTraits{GgmlType::Q4_1, "Q4_1", 32, 20, true},
    GgmlTypeTraits{GgmlType::Q5_0, "Q5_0", 32, 22, true},
    GgmlTypeTraits{GgmlType::Q5_1, "Q5_1", 32, 24, true},
    GgmlTypeTraits{GgmlType::Q8_0, "Q8_0", 32, 34, true},
    GgmlTypeTraits{GgmlType::Q8_1, "Q8_1", 32, 36, false},
    GgmlTypeTraits{GgmlType::Q2_K, "Q2_K", 256, 84, true},
    GgmlTypeTraits{GgmlType::Q3_K, "Q3_K", 256, 110, true},
    GgmlTypeTraits{GgmlType::Q4_K, "Q4_K", 256, 144, true},
    GgmlTypeTraits{GgmlType::Q5_K, "Q5_K", 256, 176, true},
    GgmlTypeTraits{GgmlType::Q6_K, "Q6_K", 256, 210, true},
    GgmlTypeTraits{GgmlType::Q8_K, "Q8_K", 256, 292, false},
    GgmlTypeTraits{GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66, false},
    GgmlTypeTraits{GgmlType::IQ2_XS, "IQ2_XS", 256, 74, false},
    GgmlTypeTraits{GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98, false},
    GgmlTypeTraits{GgmlType::IQ1_S, "IQ1_S", 256, 50, false},
    GgmlTypeTraits{GgmlType::IQ4_NL, "IQ4_NL", 32, 18, true},
    GgmlTypeTraits{GgmlType::IQ3_S, "IQ3_S", 256, 110, false},
    GgmlTypeTraits{GgmlType::IQ2_S, "IQ2_S", 256, 82, false},
    GgmlTypeTraits{GgmlType::IQ4_XS, "IQ4_XS", 256, 136, true},
    GgmlTypeTraits{GgmlType::I8, "I8", 1, 1, false},
    GgmlTypeTraits{GgmlType::I16, "I16", 1, 2, false},
    GgmlTypeTraits{GgmlType::I32, "I32", 1, 4, false},
    GgmlTypeTraits{GgmlType::I64, "I64", 1, 8, false},
    GgmlTypeTraits{GgmlType::F64, "F64", 1, 8, false},
    GgmlTypeTraits{GgmlType::IQ1_M, "IQ1_M", 256, 56, false},
    GgmlTypeTraits{GgmlType::BF16, "BF16", 1, 2, true},
    GgmlTypeTraits{GgmlType::TQ1_0, "TQ1_0", 256, 54, false},
    GgmlTypeTraits{GgmlType::TQ2_0, "TQ2_0", 256, 66, false},
    GgmlTypeTraits{GgmlType::MXFP4, "MXFP4", 32, 17, false},
    GgmlTypeTraits{GgmlType::NVFP4, "NVFP4", 64, 36, false},
    GgmlTypeTraits{GgmlType::Q1_0, "Q1_0", 128, 18, false},
    GgmlTypeTraits{GgmlType::Q2_0, "Q2_0", 64, 18, false},
};

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

std::string supported_type_names() {
  std::string names;
  for (const auto& t : kTypes)
    if (t.supported) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

}  // namespace pagoda
